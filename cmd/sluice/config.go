package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/certs"
	"github.com/sluice-rl/sluice/cluster"
)

// config is the resolved configuration: defaults, then the config file,
// then the command line, the way redis-server layers them.
type config struct {
	file             string
	port             int
	bind             []string
	requirepass      string
	maxclients       int
	timeout          time.Duration
	shards           int
	eventLoops       int // 0: a goroutine per client
	debugCommand     string
	loglevel         string
	protoMaxBulkLen  int64
	maxMultibulkLen  int64
	queryBufferLimit int64
	maxmemory        int64
	maxmemoryPolicy  string
	// maxmemory-clients: bytes, or a percentage of maxmemory when
	// maxmemClientsPct > 0; 0 bytes: no limit.
	maxmemClients    int64
	maxmemClientsPct int
	dir              string
	dbfilename       string
	save             int // seconds between periodic snapshots; 0: none, and none at shutdown
	logMaxLimit      int

	// Replication (node-id and raft-bind empty: a single node).
	nodeID        string
	raftBind      string
	raftAdvertise string
	announceAddr  string
	bootstrap     string
	peers         []string
	join          string
	raftAllow     []string
	raftFsync     string

	// TLS, with Redis's option names (tls.go). Only the Raft port uses it
	// so far (tls-replication yes).
	tlsCertFile, tlsKeyFile             string
	tlsClientCertFile, tlsClientKeyFile string
	tlsCAFile                           string
	tlsReplication                      string
	tlsProtocols, tlsCiphers            string
	tlsCiphersuites                     string
}

func defaultConfig() config {
	return config{
		port:             6380,
		bind:             []string{"127.0.0.1"},
		maxclients:       10000,
		shards:           max(4, 2*runtime.GOMAXPROCS(0)), // few shards: a pipeline's keys share locks and their lookups overlap
		eventLoops:       runtime.GOMAXPROCS(0),
		debugCommand:     "no",
		loglevel:         "notice",
		protoMaxBulkLen:  1 << 20,
		maxMultibulkLen:  1 << 20,
		queryBufferLimit: 8 << 20,
		maxmemoryPolicy:  "noeviction",
		dir:              ".",
		dbfilename:       "sluice.snap",
		save:             300,
		bootstrap:        "no",
		raftFsync:        "yes",
		tlsReplication:   "no",
		logMaxLimit:      10000,

		// All clients' buffers together, as Redis's maxmemory-clients (which
		// is off by default). On here, because 150 connections each holding
		// an unfinished 8 MiB command took 1.48 GB: 256 MiB holds the first
		// 16 KiB buffers of the default 10000 clients (170 MB with their
		// other state) and still leaves room for a dozen commands at the
		// query buffer limit, while sluice's own commands are a few hundred
		// bytes.
		maxmemClients: 256 << 20,
	}
}

// setting is one configuration directive: how to read its value and how to
// print it back for CONFIG GET.
type setting struct {
	name string
	set  func(c *config, args []string) error
	get  func(c *config) string
}

var settings = []setting{
	{"port", func(c *config, a []string) error { return intArg(a, 0, 65535, &c.port) },
		func(c *config) string { return strconv.Itoa(c.port) }},
	{"bind", func(c *config, a []string) error {
		if len(a) == 0 {
			return errors.New("wrong number of arguments")
		}
		c.bind = append([]string(nil), a...)
		return nil
	}, func(c *config) string { return strings.Join(c.bind, " ") }},
	{"requirepass", func(c *config, a []string) error { return stringArg(a, &c.requirepass) },
		func(c *config) string { return c.requirepass }},
	{"maxclients", func(c *config, a []string) error { return intArg(a, 1, 1<<20, &c.maxclients) },
		func(c *config) string { return strconv.Itoa(c.maxclients) }},
	{"timeout", func(c *config, a []string) error {
		var s int
		if err := intArg(a, 0, 1<<31-1, &s); err != nil {
			return err
		}
		c.timeout = time.Duration(s) * time.Second
		return nil
	}, func(c *config) string { return strconv.Itoa(int(c.timeout / time.Second)) }},
	{"shards", func(c *config, a []string) error { return intArg(a, 1, 1<<16, &c.shards) },
		func(c *config) string { return strconv.Itoa(c.shards) }},
	{"event-loops", func(c *config, a []string) error { return intArg(a, 0, 1024, &c.eventLoops) },
		func(c *config) string { return strconv.Itoa(c.eventLoops) }},
	{"enable-debug-command", func(c *config, a []string) error {
		return enumArg(a, &c.debugCommand, "yes", "no", "local")
	}, func(c *config) string { return c.debugCommand }},
	{"loglevel", func(c *config, a []string) error {
		return enumArg(a, &c.loglevel, "debug", "verbose", "notice", "warning", "nothing")
	}, func(c *config) string { return c.loglevel }},
	{"proto-max-bulk-len", func(c *config, a []string) error { return memArg(a, 1, 1<<30, &c.protoMaxBulkLen) },
		func(c *config) string { return strconv.FormatInt(c.protoMaxBulkLen, 10) }},
	{"proto-max-multibulk-len", func(c *config, a []string) error { return memArg(a, 1, 1<<31-1, &c.maxMultibulkLen) },
		func(c *config) string { return strconv.FormatInt(c.maxMultibulkLen, 10) }},
	{"client-query-buffer-limit", func(c *config, a []string) error {
		return memArg(a, 1<<10, 1<<31-1, &c.queryBufferLimit)
	}, func(c *config) string { return strconv.FormatInt(c.queryBufferLimit, 10) }},
	{"maxmemory", func(c *config, a []string) error { return memArg(a, 0, 1<<50, &c.maxmemory) },
		func(c *config) string { return strconv.FormatInt(c.maxmemory, 10) }},
	{"maxmemory-clients", func(c *config, a []string) error {
		v, err := oneArg(a)
		if err != nil {
			return err
		}
		c.maxmemClients, c.maxmemClientsPct, err = parseClientMemory(v)
		return err
	}, func(c *config) string {
		if c.maxmemClientsPct > 0 {
			return strconv.Itoa(c.maxmemClientsPct) + "%"
		}
		return strconv.FormatInt(c.maxmemClients, 10)
	}},
	{"maxmemory-policy", func(c *config, a []string) error {
		return enumArg(a, &c.maxmemoryPolicy, "noeviction", "volatile-ttl")
	}, func(c *config) string { return c.maxmemoryPolicy }},
	{"dir", func(c *config, a []string) error { return stringArg(a, &c.dir) },
		func(c *config) string { return c.dir }},
	{"dbfilename", func(c *config, a []string) error {
		if err := stringArg(a, &c.dbfilename); err != nil {
			return err
		}
		if c.dbfilename == "" || strings.ContainsRune(c.dbfilename, '/') {
			return fmt.Errorf("%q must be a file name, without a directory (that is --dir)", c.dbfilename)
		}
		return nil
	}, func(c *config) string { return c.dbfilename }},
	{"save", func(c *config, a []string) error {
		if len(a) == 1 && a[0] == "" { // save "" disables, as in redis.conf
			c.save = 0
			return nil
		}
		return intArg(a, 0, 1<<31-1, &c.save)
	}, func(c *config) string { return strconv.Itoa(c.save) }},
	{"node-id", func(c *config, a []string) error { return stringArg(a, &c.nodeID) },
		func(c *config) string { return c.nodeID }},
	{"raft-bind", func(c *config, a []string) error { return stringArg(a, &c.raftBind) },
		func(c *config) string { return c.raftBind }},
	{"raft-advertise", func(c *config, a []string) error { return stringArg(a, &c.raftAdvertise) },
		func(c *config) string { return c.raftAdvertise }},
	{"announce-addr", func(c *config, a []string) error { return stringArg(a, &c.announceAddr) },
		func(c *config) string { return c.announceAddr }},
	{"bootstrap", func(c *config, a []string) error { return enumArg(a, &c.bootstrap, "yes", "no", "force") },
		func(c *config) string { return c.bootstrap }},
	{"peers", func(c *config, a []string) error { return listArg(a, &c.peers) },
		func(c *config) string { return strings.Join(c.peers, " ") }},
	{"join", func(c *config, a []string) error { return stringArg(a, &c.join) },
		func(c *config) string { return c.join }},
	{"raft-allow", func(c *config, a []string) error { return listArg(a, &c.raftAllow) },
		func(c *config) string { return strings.Join(c.raftAllow, " ") }},
	{"raft-fsync", func(c *config, a []string) error { return enumArg(a, &c.raftFsync, "yes", "no") },
		func(c *config) string { return c.raftFsync }},
	{"tls-cert-file", func(c *config, a []string) error { return stringArg(a, &c.tlsCertFile) },
		func(c *config) string { return c.tlsCertFile }},
	{"tls-key-file", func(c *config, a []string) error { return stringArg(a, &c.tlsKeyFile) },
		func(c *config) string { return c.tlsKeyFile }},
	{"tls-client-cert-file", func(c *config, a []string) error { return stringArg(a, &c.tlsClientCertFile) },
		func(c *config) string { return c.tlsClientCertFile }},
	{"tls-client-key-file", func(c *config, a []string) error { return stringArg(a, &c.tlsClientKeyFile) },
		func(c *config) string { return c.tlsClientKeyFile }},
	{"tls-ca-cert-file", func(c *config, a []string) error { return stringArg(a, &c.tlsCAFile) },
		func(c *config) string { return c.tlsCAFile }},
	{"tls-replication", func(c *config, a []string) error { return enumArg(a, &c.tlsReplication, "yes", "no") },
		func(c *config) string { return c.tlsReplication }},
	{"tls-protocols", func(c *config, a []string) error {
		if len(a) == 0 {
			return errors.New("wrong number of arguments")
		}
		v := strings.Join(a, " ") // tls-protocols TLSv1.2 TLSv1.3, quoted or not
		if _, _, err := certs.ParseProtocols(v); err != nil {
			return err
		}
		c.tlsProtocols = v
		return nil
	}, func(c *config) string { return c.tlsProtocols }},
	{"tls-ciphers", func(c *config, a []string) error {
		if err := stringArg(a, &c.tlsCiphers); err != nil {
			return err
		}
		_, err := certs.ParseCiphers(c.tlsCiphers)
		return err
	}, func(c *config) string { return c.tlsCiphers }},
	{"tls-ciphersuites", func(c *config, a []string) error {
		if err := stringArg(a, &c.tlsCiphersuites); err != nil {
			return err
		}
		return certs.CheckCiphersuites(c.tlsCiphersuites)
	}, func(c *config) string { return c.tlsCiphersuites }},
	// The largest limit RL.LOG and RL.ACQUIRE accept: their state holds 8
	// bytes per logged unit, 16 per lease holder.
	{"log-max-limit", func(c *config, a []string) error { return intArg(a, 1, 100_000_000, &c.logMaxLimit) },
		func(c *config) string { return strconv.Itoa(c.logMaxLimit) }},
}

func findSetting(name string) *setting {
	for i := range settings {
		if settings[i].name == name {
			return &settings[i]
		}
	}
	return nil
}

// parseArgs reads redis-server style arguments: an optional config file
// first, then "--name value…" pairs that override it.
func parseArgs(argv []string) (config, error) {
	c := defaultConfig()
	if len(argv) > 0 && !strings.HasPrefix(argv[0], "--") {
		c.file = argv[0]
		text, err := os.ReadFile(c.file)
		if err != nil {
			return c, err
		}
		directives, err := parseConfigText(string(text))
		if err != nil {
			return c, fmt.Errorf("%s: %w", c.file, err)
		}
		for _, d := range directives {
			if err := apply(&c, d.args[0], d.args[1:]); err != nil {
				return c, fmt.Errorf("%s:%d: %w", c.file, d.line, err)
			}
		}
		argv = argv[1:]
	}
	for i := 0; i < len(argv); {
		name, ok := strings.CutPrefix(argv[i], "--")
		if !ok || name == "" {
			return c, fmt.Errorf("unexpected argument %q: options look like --port 6380", argv[i])
		}
		j := i + 1
		for j < len(argv) && !strings.HasPrefix(argv[j], "--") {
			j++
		}
		if err := apply(&c, name, argv[i+1:j]); err != nil {
			return c, fmt.Errorf("--%s: %w", name, err)
		}
		i = j
	}
	return c, nil
}

func apply(c *config, name string, args []string) error {
	s := findSetting(strings.ToLower(name))
	if s == nil {
		return fmt.Errorf("unknown option %q", name)
	}
	return s.set(c, args)
}

// directive is one line of a config file, split into words.
type directive struct {
	line int
	args []string
}

// parseConfigText splits a redis.conf-style text into directives: one per
// line, words separated by blanks, "double" or 'single' quoted words, and
// lines starting with # ignored.
func parseConfigText(text string) ([]directive, error) {
	var out []directive
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == '#' {
			continue
		}
		words, err := splitWords(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		if len(words) > 0 {
			out = append(out, directive{line: n + 1, args: words})
		}
	}
	return out, nil
}

func splitWords(line string) ([]string, error) {
	var words []string
	for i := 0; i < len(line); {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i == len(line) {
			break
		}
		if q := line[i]; q == '"' || q == '\'' {
			end := strings.IndexByte(line[i+1:], q)
			if end < 0 {
				return nil, errors.New("unbalanced quotes")
			}
			words = append(words, line[i+1:i+1+end])
			i += end + 2
			if i < len(line) && line[i] != ' ' && line[i] != '\t' {
				return nil, errors.New("a closing quote must be followed by a space")
			}
			continue
		}
		start := i
		for i < len(line) && line[i] != ' ' && line[i] != '\t' {
			i++
		}
		words = append(words, line[start:i])
	}
	return words, nil
}

func oneArg(a []string) (string, error) {
	if len(a) != 1 {
		return "", fmt.Errorf("wants one value, got %d", len(a))
	}
	return a[0], nil
}

func stringArg(a []string, dst *string) error {
	v, err := oneArg(a)
	if err == nil {
		*dst = v
	}
	return err
}

// listArg reads words, and "" (config file: peers "") as an empty list.
func listArg(a []string, dst *[]string) error {
	var out []string
	for _, w := range a {
		if w != "" {
			out = append(out, w)
		}
	}
	*dst = out
	return nil
}

// bootstrapMode maps --bootstrap to the cluster's mode.
func bootstrapMode(v string) cluster.BootstrapMode {
	switch v {
	case "yes":
		return cluster.BootstrapIfNew
	case "force":
		return cluster.BootstrapForce
	default:
		return cluster.NoBootstrap
	}
}

func intArg(a []string, lo, hi int, dst *int) error {
	v, err := oneArg(a)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return fmt.Errorf("%q is not an integer from %d to %d", v, lo, hi)
	}
	*dst = n
	return nil
}

func enumArg(a []string, dst *string, allowed ...string) error {
	v, err := oneArg(a)
	if err != nil {
		return err
	}
	for _, ok := range allowed {
		if strings.EqualFold(v, ok) {
			*dst = ok
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %s", v, strings.Join(allowed, ", "))
}

// memArg reads a size the way redis.conf writes them: 1024, 1k (1000),
// 1kb (1024), 1m, 1mb, 1g, 1gb.
func memArg(a []string, lo, hi int64, dst *int64) error {
	v, err := oneArg(a)
	if err != nil {
		return err
	}
	n, err := parseMemory(v)
	if err != nil || n < lo || n > hi {
		return fmt.Errorf("%q is not a size from %d to %d bytes", v, lo, hi)
	}
	*dst = n
	return nil
}

func parseMemory(v string) (int64, error) {
	s := strings.ToLower(v)
	units := []struct {
		suffix string
		mul    int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"b", 1}}
	mul := int64(1)
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mul = num, u.mul
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || (n > 0 && mul > (1<<62)/n) {
		return 0, fmt.Errorf("invalid size %q", v)
	}
	return n * mul, nil
}

// parseClientMemory reads maxmemory-clients as redis.conf writes it: a size
// (0: no limit), or a percentage of maxmemory from 1% to 100%.
func parseClientMemory(v string) (bytes int64, pct int, err error) {
	if num, ok := strings.CutSuffix(v, "%"); ok {
		pct, err := strconv.Atoi(num)
		if err != nil || pct < 1 || pct > 100 || num[0] == '+' {
			return 0, 0, fmt.Errorf("%q is not a percentage of maxmemory from 1%% to 100%%", v)
		}
		return 0, pct, nil
	}
	if err := memArg([]string{v}, 0, 1<<50, &bytes); err != nil {
		return 0, 0, err
	}
	return bytes, 0, nil
}

// clientMemoryCap returns maxmemory-clients in bytes, a percentage taken of
// maxmemory, or -1 for no limit.
func (c *config) clientMemoryCap() (int64, error) {
	switch {
	case c.maxmemClientsPct > 0 && c.maxmemory == 0:
		return 0, fmt.Errorf("--maxmemory-clients %d%% is a share of --maxmemory, which is not set", c.maxmemClientsPct)
	case c.maxmemClientsPct > 0:
		return max(c.maxmemory*int64(c.maxmemClientsPct)/100, 1), nil // maxmemory is at most 2^50
	case c.maxmemClients == 0:
		return -1, nil
	}
	return c.maxmemClients, nil
}
