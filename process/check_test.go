package process

import (
	"bytes"
	"strings"
	"testing"
)

// TestCheckRefusesWhatOpenRefuses: each configuration below is refused by
// Check with the reason Open gives, without a file, a port or a peer; the
// valid ones, host names in the addresses included (a pod's DNS name that
// does not resolve here), pass.
func TestCheckRefusesWhatOpenRefuses(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // "": valid
	}{
		{[]string{"--node-id", "n1"}, "replication needs both --node-id and --raft-bind"},
		{[]string{"--raft-bind", "127.0.0.1:7000"}, "replication needs both"},
		{[]string{"--node-id", "n1", "--raft-bind", "127.0.0.1:7000", "--maxmemory", "1mb"}, "--maxmemory is not supported with replication"},
		{[]string{"--node-id", "n1", "--raft-bind", "127.0.0.1:7000", "--appendonly", "yes"}, "--appendonly is not supported with replication"},
		{[]string{"--node-id", "n1", "--raft-bind", "127.0.0.1:7000", "--port", "0", "--grpc-bind", "127.0.0.1:8081"}, "--port 0 in a replicated group"},
		{[]string{"--port", "0"}, "no port to serve clients on"},
		{[]string{"--tls-replication", "yes"}, "it needs --node-id and --raft-bind"},
		{[]string{"--maxmemory-clients", "10%"}, "a share of --maxmemory"},
		{[]string{"--node-id", "n1", "--raft-bind", "0.0.0.0:7000", "--raft-advertise", "sluice-0.sluice"}, `--raft-advertise: "sluice-0.sluice" is not a host:port address`},
		{[]string{"--node-id", "n1", "--raft-bind", "0.0.0.0:7000", "--join", "sluice-0"}, "--join:"},
		{[]string{"--node-id", "n1", "--raft-bind", "0.0.0.0:7000", "--peers", "a:6380", "b"}, `--peers: "b"`},
		{[]string{"--announce-addr", "x"}, "--announce-addr:"},
		{[]string{"--node-id", "sluice-1", "--raft-bind", "0.0.0.0:7000", "--raft-advertise", "sluice-1.sluice.default.svc.cluster.local:7000",
			"--announce-addr", "sluice-1.sluice.default.svc.cluster.local:6380", "--join", "sluice-0.sluice.default.svc.cluster.local:6380"}, ""},
		{[]string{"--port", "0", "--grpc-bind", "127.0.0.1:8081"}, ""},
		{nil, ""},
	} {
		opts, err := parseArgs(c.args)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		err = opts.Check()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Check(%v) = %v; want valid", c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("Check(%v) = %v; want %q", c.args, err, c.want)
		}
		if c.want == "" || strings.HasPrefix(c.want, "--") && strings.Contains(c.want, ": ") {
			continue // valid, or an address Open would only refuse after binding
		}
		opts.Set("dir", t.TempDir())
		if p, err := Open(opts); err == nil || !strings.Contains(err.Error(), c.want) {
			if p != nil {
				p.close()
			}
			t.Errorf("Open(%v) = %v; want %q", c.args, err, c.want)
		}
	}
}

// TestWriteConfigReadsBack: the file WriteConfig writes, read back as a
// config file, gives every option the value it was written from: the
// defaults, and a configuration with every kind of value (lists, quoted
// words, renames, a percentage, an empty password).
func TestWriteConfigReadsBack(t *testing.T) {
	set, err := parseArgs([]string{"--port", "auto", "--bind", "127.0.0.1", "::1", "--requirepass", "two words",
		"--rename-command", "FLUSHALL", "", "--rename-command", "KEYS", "MYKEYS", "--maxmemory", "1mb",
		"--maxmemory-clients", "10%", "--shards", "8", "--tls-protocols", "TLSv1.2", "--policies", "a.yaml", "rules.d",
		"--save", "", "--grpc-headers", "ietf", "--bootstrap", "yes"})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]Options{"defaults": defaultConfig(), "set": set} {
		var buf bytes.Buffer
		if err := WriteConfig(&buf, want); err != nil {
			t.Fatal(err)
		}
		directives, err := parseConfigText(buf.String())
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, buf.String())
		}
		got := defaultConfig()
		for _, d := range directives {
			if err := apply(&got, d.args[0], d.args[1:]); err != nil {
				t.Fatalf("%s: line %d: %v", name, d.line, err)
			}
		}
		for _, o := range options {
			if g, w := o.get(&got), o.get(&want); g != w {
				t.Errorf("%s: %s reads back as %q; want %q", name, o.name, g, w)
			}
			if !strings.Contains(buf.String(), "\n# "+o.doc+"\n") {
				t.Errorf("%s: no description of %s", name, o.name)
			}
		}
	}
}
