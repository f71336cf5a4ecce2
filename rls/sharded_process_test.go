package rls

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluice-rl/sluice/internal/testutil"
	"github.com/sluice-rl/sluice/keyslot"
	"github.com/sluice-rl/sluice/policy"
)

// The gRPC service of a sharded cluster's nodes, as real processes: two
// data groups of one node each, every node serving gRPC. A call through any
// node decides each descriptor on the group that owns its key's slot.

// shardedRules: a token bucket of 5 an hour per user (one token back
// every 12 minutes, so counts are exact during a test) and 3 an hour per
// user and path; the probe domain checks that both groups serve.
const shardedRules = `domain: api
%s
descriptors:
  - key: user_id
    rate_limit: {unit: hour, requests_per_unit: 5}
    sluice: {algorithm: token}
    descriptors:
      - key: path
        rate_limit: {unit: hour, requests_per_unit: 3}
        sluice: {algorithm: token}
`

// groupOfSlot is the data group that a new 2-group cluster gives slot.
func groupOfSlot(slot int) int { return 1 + slot*2/keyslot.Slots }

// rlsClient dials a node's gRPC port.
func rlsClient(t *testing.T, s *testutil.Sluice) rlsv3.RateLimitServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(s.Listening("grpc"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return rlsv3.NewRateLimitServiceClient(conn)
}

func rlsCall(c rlsv3.RateLimitServiceClient, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.ShouldRateLimit(ctx, req)
}

// writeRules writes the rules, with slotBy ("" or "slot_by: user_id"), to
// a file of its own and returns its path.
func writeRules(t *testing.T, slotBy string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(shardedRules, slotBy)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startSharded starts group 1's and group 2's nodes with extra flags and
// waits until both groups decide through both nodes' gRPC ports.
func startSharded(t *testing.T, extra ...string) []*testutil.Sluice {
	t.Helper()
	if testing.Short() {
		t.Skip("process tests build and run the binary; skipped with -short")
	}
	common := func(id string) []string {
		return append([]string{"--node-id", id, "--raft-bind", "127.0.0.1:0", "--grpc-bind", "127.0.0.1:0",
			"--cluster-groups", "2", "--bootstrap", "yes", "--loglevel", "warning"}, extra...)
	}
	g1 := testutil.Start(t, append(common("g1"), "--cluster-group", "1")...)
	g2 := testutil.Start(t, append(common("g2"), "--cluster-group", "2", "--cluster-seed", g1.Addr)...)
	nodes := []*testutil.Sluice{g1, g2}
	ctx := context.Background()
	for _, s := range nodes {
		rc := redis.NewClient(&redis.Options{Addr: s.Addr})
		deadline := time.Now().Add(30 * time.Second)
		for {
			info, _ := rc.ClusterInfo(ctx).Result()
			if strings.HasPrefix(info, "cluster_state:ok") {
				break
			}
			select {
			case <-g1.Exited():
				t.Fatalf("g1 exited:\n%s", g1.Log())
			case <-g2.Exited():
				t.Fatalf("g2 exited:\n%s", g2.Log())
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("CLUSTER INFO on %s = %q after 30 s:\n%s\n%s", s.Addr, info, g1.Log(), g2.Log())
			}
		}
		rc.Close()
	}
	return nodes
}

// usersOf returns n user ids whose api keys (as the rules make them) lie
// in data group g's slots.
func usersOf(t *testing.T, rs *policy.RuleSet, g, n int) []string {
	t.Helper()
	var out []string
	for i := 0; len(out) < n; i++ {
		u := fmt.Sprintf("u%d", i)
		var p policy.Plan
		if err := rs.Plan(&p, []byte("api"), 1, []policy.Descriptor{{Entries: []policy.Entry{{Key: []byte("user_id"), Value: []byte(u)}}}}); err != nil {
			t.Fatal(err)
		}
		if groupOfSlot(policy.StoredSlot(p.Items[0].Key)) == g {
			out = append(out, u)
		}
	}
	return out
}

// statusText is a response as compared across deployments: the overall
// code and each status's code and limit_remaining.
func statusText(r *rlsv3.RateLimitResponse) string {
	s := r.OverallCode.String()
	for _, st := range r.Statuses {
		s += fmt.Sprintf(" %s/%d", st.Code, st.LimitRemaining)
	}
	return s
}

func TestShardedClusterDecidesOnTheOwningGroup(t *testing.T) {
	rules := writeRules(t, "")
	nodes := startSharded(t, "--policies", rules)
	single := testutil.Start(t, "--grpc-bind", "127.0.0.1:0", "--policies", rules, "--loglevel", "warning")
	rs, err := policy.Load([]string{rules}, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := usersOf(t, rs, 1, 3), usersOf(t, rs, 2, 3)
	clients := []rlsv3.RateLimitServiceClient{rlsClient(t, nodes[0]), rlsClient(t, nodes[1])}
	ref := rlsClient(t, single)
	// Each call has descriptors of both groups; the calls alternate between
	// the nodes. 7 calls on users of capacity 5 (and 3 per path): each
	// descriptor's statuses must be the single node's, call by call.
	for i := 0; i < 7; i++ {
		req := request("api", 1,
			desc("user_id", a[0]), desc("user_id", b[0]),
			desc("user_id", a[1], "path", "/x"), desc("user_id", b[1], "path", "/x"),
			withHits(desc("user_id", a[2]), 2), withHits(desc("user_id", b[2]), 2))
		want, err := rlsCall(ref, req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := rlsCall(clients[i%2], req)
		if err != nil {
			t.Fatalf("call %d through node %d: %v\n%s\n%s", i, i%2+1, err, nodes[0].Log(), nodes[1].Log())
		}
		if statusText(got) != statusText(want) {
			t.Fatalf("call %d through node %d: %s; a single node answers %s", i, i%2+1, statusText(got), statusText(want))
		}
	}
	// The state of each descriptor lies in the group that owns its key's
	// slot: that group's node holds the key, and the other node redirects.
	ctx := context.Background()
	var keys []string
	for _, u := range append(append([]string(nil), a...), b...) {
		keys = append(keys, "rls:api:token:user_id="+u)
	}
	keys[1] += ":path=/x"
	keys[4] += ":path=/x"
	for _, key := range keys {
		g := groupOfSlot(keyslot.Of([]byte(key)))
		own := redis.NewClient(&redis.Options{Addr: nodes[g-1].Addr})
		other := redis.NewClient(&redis.Options{Addr: nodes[2-g].Addr, MaxRetries: -1})
		if n, err := own.Exists(ctx, key).Result(); err != nil || n != 1 {
			t.Errorf("EXISTS %s on group %d's node = %d, %v; want 1", key, g, n, err)
		}
		if _, err := other.Exists(ctx, key).Result(); err == nil || !strings.HasPrefix(err.Error(), "MOVED") {
			t.Errorf("EXISTS %s on the other group's node: %v; want MOVED", key, err)
		}
		own.Close()
		other.Close()
	}
}

func TestShardedBatchCallWithSlotBy(t *testing.T) {
	rules := writeRules(t, "slot_by: user_id")
	nodes := startSharded(t, "--policies", rules, "--grpc-batch", "call")
	rs, err := policy.Load([]string{rules}, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// One user per group, each called through the other group's node and
	// through its own.
	for gi := range nodes {
		users := usersOf(t, rs, gi+1, 2)
		for k, via := range []int{1 - gi, gi} {
			c, user := rlsClient(t, nodes[via]), users[k]
			both := request("api", 1, desc("user_id", user), desc("user_id", user, "path", "/p"))
			// 3 calls fit both limits; the 4th is over the path's, and takes
			// nothing from the user's either (all or nothing).
			for i := 0; i < 4; i++ {
				r, err := rlsCall(c, both)
				if err != nil {
					t.Fatalf("user %s via node %d, call %d: %v\n%s\n%s", user, via+1, i, err, nodes[0].Log(), nodes[1].Log())
				}
				want := fmt.Sprintf("OK OK/%d OK/%d", 4-i, 2-i)
				if i == 3 {
					want = "OVER_LIMIT OK/2 OVER_LIMIT/0"
				}
				if statusText(r) != want {
					t.Fatalf("user %s via node %d, call %d: %s; want %s", user, via+1, i, statusText(r), want)
				}
			}
			r, err := rlsCall(c, request("api", 2, desc("user_id", user)))
			if err != nil {
				t.Fatal(err)
			}
			if got := statusText(r); got != "OK OK/0" {
				t.Fatalf("user %s after the refused call: %s; want OK OK/0 (2 of 5 left)", user, got)
			}
			key := "rls:api:token:{user_id=" + user + "}"
			if g := groupOfSlot(policy.StoredSlot([]byte(key))); g != gi+1 {
				t.Fatalf("%s is in group %d's slots; want %d", key, g, gi+1)
			}
			n, err := redis.NewClient(&redis.Options{Addr: nodes[gi].Addr}).Exists(context.Background(), key).Result()
			if err != nil || n != 1 {
				t.Fatalf("EXISTS %s on group %d's node = %d, %v; want 1", key, gi+1, n, err)
			}
		}
	}
}

// A sharded node with --grpc-batch call refuses rules without slot_by at
// start (exit 2, a configuration error), and a reload to such rules keeps
// the rules in force.
func TestShardedBatchCallRefusesUnslottedRules(t *testing.T) {
	if testing.Short() {
		t.Skip("process tests build and run the binary; skipped with -short")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testutil.Binary(t), "--port", "auto", "--bind", "127.0.0.1", "--dir", dir,
		"--node-id", "g1", "--raft-bind", "127.0.0.1:0", "--grpc-bind", "127.0.0.1:0", "--cluster-group", "1",
		"--cluster-groups", "2", "--bootstrap", "yes", "--grpc-batch", "call", "--policies", writeRules(t, ""))
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "domain 'api' needs slot_by") {
		t.Fatalf("exit %d (%v); want 2 and the domain named:\n%s", code, err, out)
	}

	rules := writeRules(t, "slot_by: user_id")
	nodes := startSharded(t, "--policies", rules, "--grpc-batch", "call")
	if err := os.WriteFile(rules, []byte(fmt.Sprintf(shardedRules, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(nodes[0].Log(), "needs slot_by"); {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal of the reload logged:\n%s", nodes[0].Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	r, err := rlsCall(rlsClient(t, nodes[0]), request("api", 1, desc("user_id", "u1"), desc("user_id", "u1", "path", "/p")))
	if err != nil || statusText(r) != "OK OK/4 OK/2" {
		t.Fatalf("after the refused reload: %v %v; want OK OK/4 OK/2", r, err)
	}
}
