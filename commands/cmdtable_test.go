package commands

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/acl"
	"github.com/sluice-rl/sluice/internal/testutil"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/commands.golden from the running code")

// sampleInvocations are calls of every command that has keys (and of the
// RL.* commands whose keys are derived), for the key tables below.
var sampleInvocations = []string{
	"rl.token k1 10/s 20", "rl.token k1 10/s 20 3", "rl.leaky k1 10/s 20", "rl.fixed k1 10 1s",
	"rl.sliding k1 10 1s 2", "rl.log k1 10 1s",
	"rl.all 1 TOKEN a 10/s 20", "rl.all 1 TOKEN a 10/s 20 FIXED b 10 1s LOG c 5 1m",
	"rl.check p s", "rl.check p s 3", "rl.check p1 s1 p2 s2", "rl.check p1 s1 p2 s2 4",
	"rl.info k1", "rl.info POLICY p s", "rl.reset k1", "rl.reset k1 k2 k3", "rl.reset POLICY p s1 s2",
	"rl.override SET p s TOKEN 10/s 20", "rl.override GET p s", "rl.override DEL p s", "rl.override LIST p",
	"rl.match dom DESCRIPTOR user u1", "rl.acquire k1 10 id1 5000", "rl.release k1 id1",
	"rl.take k1 TOKEN 10/s 20 5", "rl.take k1 FIXED 10 1s 5 MIN 2",
	"cl.throttle k1 15 30 60", "cl.throttle k1 15 30 60 2",
	"eval s 0", "eval s 2 a b c", "evalsha 0123 1 a b", "eval_ro s 1 a", "evalsha_ro 0123 2 a b",
	"del a", "del a b c", "unlink a b", "exists a b", "type a", "ttl a", "pttl a",
	"get a", "set a v", "set a v GET", "incr a", "incrby a 2", "decr a", "decrby a 2", "expire a 10",
	"pexpire a 10 NX", "setex a 10 v", "psetex a 10 v", "setnx a v", "getdel a", "mget a b c",
	"watch a b", "memory usage a", "object encoding a",
}

// TestCommandTableGolden keeps every command's ACL categories, COMMAND
// INFO and the key positions ACL checks equal to testdata/commands.golden;
// go test -run TestCommandTableGolden -update rewrites it.
func TestCommandTableGolden(t *testing.T) {
	reg, err := aclRegistry()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, cat := range reg.Categories() {
		names, err := reg.CategoryCommands(cat)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		fmt.Fprintf(&b, "ACL CAT %s: %s\n", cat, strings.Join(names, " "))
	}
	s := startServer(t, testConfig{})
	c := testutil.Dial(t, s.addr)
	for _, cmd := range sortedCommands() {
		fmt.Fprintf(&b, "COMMAND INFO %s: %s\n", cmd.name, c.Do("COMMAND INFO "+cmd.name+"\r\n"))
	}
	for _, inv := range sampleInvocations {
		fmt.Fprintf(&b, "ACL KEYS %s: %s\n", inv, aclKeyPositions(bytes.Fields([]byte(inv))))
	}
	compareGolden(t, "testdata/commands.golden", b.String())
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			t.Errorf("%s line %d:\n got %s\nwant %s", path, i+1, g, w)
		}
	}
}

func accessName(a acl.Access) string {
	switch a {
	case acl.Read | acl.Write:
		return "RW"
	case acl.Read:
		return "R"
	case acl.Write:
		return "W"
	}
	return "-"
}

// aclKeyPositions lists the arguments the ACL checks as keys for args, with
// the access it checks: "3:RW 7:RW".
func aclKeyPositions(args [][]byte) string {
	var out []string
	cmd := lookupCommand(args[0])
	for _, ks := range aclRanges(cmd) {
		last := ks.Last
		if last < 0 {
			last += len(args)
		}
		for i := ks.First; i <= last && i < len(args); i += ks.Step {
			out = append(out, fmt.Sprintf("%d:%s", i, accessName(ks.Access)))
		}
	}
	if locate := aclLocate(cmd); locate != nil {
		for _, k := range locate(args, nil) {
			out = append(out, fmt.Sprintf("%d:%s", k.Pos, accessName(k.Access)))
		}
	}
	return strings.Join(out, " ")
}
