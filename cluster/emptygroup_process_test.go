package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A node of data group 2 joining a cluster that group 1's first node
// started with --cluster-groups 1 (nodes given different --cluster-groups)
// owns no slot and serves nothing: it must say so in its log, with the
// table's groups, rather than run silently empty.
func TestProcessGroupWithoutSlotsSaysSo(t *testing.T) {
	bin := buildSluice(t)
	base := t.TempDir()
	mk := func(id, ip string, g, groups int) *proc {
		p := &proc{t: t, bin: bin, id: id, raftIP: ip, dir: base + "/" + id, logPath: base + "/" + id + ".log",
			portsPath: base + "/" + id + ".ports"}
		p.always = []string{"--cluster-group", fmt.Sprint(g), "--cluster-groups", fmt.Sprint(groups)}
		return p
	}
	g1, g2 := mk("g1n1", "127.0.0.11", 1, 1), mk("g2n1", "127.0.0.21", 2, 2)
	t.Cleanup(func() {
		for _, p := range []*proc{g1, g2} {
			p.kill()
			if t.Failed() {
				t.Logf("--- %s log:\n%s", p.id, p.logTail())
			}
		}
	})
	g1.start("--bootstrap", "yes")
	waitFor(t, 15*time.Second, func() bool { return clusterComplete(g1, 1, 1) })
	g2.start("--bootstrap", "yes", "--cluster-seed", g1.addr())
	waitFor(t, 15*time.Second, func() bool {
		log := g2.logTail()
		return strings.Contains(log, "gives data group 2 no slot") && strings.Contains(log, "groups go up to 1")
	})
}
