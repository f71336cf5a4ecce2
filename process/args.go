package process

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Reading the configuration: a redis.conf-style file, then redis-server
// style flags, and the value syntaxes of redis.conf.

// parseArgs reads redis-server style arguments: an optional config file
// first, then "--name value…" pairs that override it.
func parseArgs(argv []string) (Options, error) {
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

func apply(c *Options, name string, args []string) error {
	s := findOption(strings.ToLower(name))
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

// boolArg reads redis.conf's yes or no (in any letter case).
func boolArg(a []string, dst *bool) error {
	var v string
	if err := enumArg(a, &v, "yes", "no"); err != nil {
		return err
	}
	*dst = v == "yes"
	return nil
}

// yesNo prints a boolean as redis.conf writes it.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// secondsArg reads a whole number of seconds (0 to 2^31-1) as a duration.
func secondsArg(a []string, dst *time.Duration) error {
	var s int
	if err := intArg(a, 0, 1<<31-1, &s); err != nil {
		return err
	}
	*dst = time.Duration(s) * time.Second
	return nil
}

// positiveSeconds reads a whole number of seconds, at least 1.
func positiveSeconds(a []string, dst *time.Duration) error {
	var s int
	if err := intArg(a, 1, 1<<31-1, &s); err != nil {
		return err
	}
	*dst = time.Duration(s) * time.Second
	return nil
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

// named is one value of a setting that names a constant.
type named[T comparable] struct {
	name  string
	value T
}

// namedArg reads one of the names of values (in any letter case).
func namedArg[T comparable](a []string, dst *T, values []named[T]) error {
	names := make([]string, len(values))
	for i, v := range values {
		names[i] = v.name
	}
	var v string
	if err := enumArg(a, &v, names...); err != nil {
		return err
	}
	for _, nv := range values {
		if nv.name == v {
			*dst = nv.value
		}
	}
	return nil
}

// nameOf is v's name among values ("" if it has none).
func nameOf[T comparable](v T, values []named[T]) string {
	for _, nv := range values {
		if nv.value == v {
			return nv.name
		}
	}
	return ""
}

// addrArg reads a host:port, or "" (off).
func addrArg(a []string, dst *string) error {
	v, err := oneArg(a)
	if err != nil {
		return err
	}
	if v != "" {
		if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
			return fmt.Errorf("%q is not a host:port address", v)
		}
	}
	*dst = v
	return nil
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
// maxmemory, or 0 for no limit.
func (c *Options) clientMemoryCap() (int64, error) {
	switch {
	case c.maxmemClientsPct > 0 && c.maxmemory == 0:
		return 0, fmt.Errorf("--maxmemory-clients %d%% is a share of --maxmemory, which is not set", c.maxmemClientsPct)
	case c.maxmemClientsPct > 0:
		return max(c.maxmemory*int64(c.maxmemClientsPct)/100, 1), nil // maxmemory is at most 2^50
	}
	return c.maxmemClients, nil
}

// parseSave reads save: sluice's seconds ("0" or "" for none), or Redis's
// "seconds changes" pairs, in one argument or several. sluice saves
// periodically whatever changed, so of several pairs it keeps the shortest
// period: a save at least as often as Redis would make one.
func parseSave(a []string, dst *int) error {
	var f []string
	for _, s := range a {
		f = append(f, strings.Fields(s)...)
	}
	if len(f) == 0 {
		*dst = 0
		return nil
	}
	if len(f) == 1 {
		return intArg(f, 0, 1<<31-1, dst)
	}
	if len(f)%2 != 0 {
		return fmt.Errorf("%q is not seconds, nor pairs of seconds and changes", strings.Join(a, " "))
	}
	least := 0
	for i := 0; i < len(f); i += 2 {
		var secs, changes int
		if err := intArg(f[i:i+1], 1, 1<<31-1, &secs); err != nil {
			return err
		}
		if err := intArg(f[i+1:i+2], 0, 1<<31-1, &changes); err != nil {
			return err
		}
		if least == 0 || secs < least {
			least = secs
		}
	}
	*dst = least
	return nil
}
