package cluster

import (
	"strings"
	"testing"
	"time"
)

// A --dir holds one group's Raft state: a node started on it as another
// group (another --cluster-group, none, or one on an unsharded group's
// dir) would report that group's members and slots as its own to the meta
// group and append the other group's slots to its own log, so that two
// groups would serve the same slots. It must refuse to start, and start
// again as the group its --dir belongs to.
func TestProcessDirKeepsItsGroup(t *testing.T) {
	ps := newProcs(t, 2)
	sharded, plain := ps[0], ps[1]

	sharded.start("--cluster-group", "1", "--cluster-groups", "1", "--bootstrap", "yes")
	waitFor(t, 15*time.Second, func() bool { return sharded.info("ready") == "true" && clusterComplete(sharded, 1, 1) })
	sharded.kill()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"another group", []string{"--cluster-group", "2", "--cluster-groups", "2", "--cluster-seed", "127.0.0.1:1"}, "data group 1"},
		{"no --cluster-group", nil, "data group 1"},
	} {
		code, out := sharded.runToExit(20*time.Second, c.args...)
		if code != 1 || !strings.Contains(out, "refusing to start") || !strings.Contains(out, c.want) {
			t.Fatalf("%s on a data group 1 --dir: exit %d; want 1 and a refusal naming %q; output:\n%s", c.name, code, c.want, out)
		}
	}
	sharded.start("--cluster-group", "1", "--cluster-groups", "1", "--bootstrap", "yes")
	waitFor(t, 15*time.Second, func() bool { return sharded.info("ready") == "true" && clusterComplete(sharded, 1, 1) })

	plain.start("--bootstrap", "yes")
	waitFor(t, 15*time.Second, func() bool { return plain.info("ready") == "true" })
	plain.kill()
	code, out := plain.runToExit(20*time.Second, "--cluster-group", "1", "--cluster-groups", "1", "--bootstrap", "yes")
	if code != 1 || !strings.Contains(out, "refusing to start") || !strings.Contains(out, "unsharded group") {
		t.Fatalf("--cluster-group 1 on an unsharded group's --dir: exit %d; want 1 and a refusal; output:\n%s", code, out)
	}
	plain.start()
	waitFor(t, 15*time.Second, func() bool { return plain.info("ready") == "true" })
}
