package commands

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// fixedShard is a Topology of constant nodes.
type fixedShard struct{ sh Shard }

func (f fixedShard) ClusterShards() []Shard { return []Shard{f.sh} }

const (
	idA = "0123456789abcdef0123456789abcdef01234567"
	idB = "89abcdef0123456789abcdef0123456789abcdef"
	idC = "fedcba9876543210fedcba9876543210fedcba98"
)

// rawRESP reads one reply of either protocol as a canonical text: each
// value as its type byte and content, aggregates in brackets.
func rawRESP(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil || len(line) < 3 {
		return line, io.ErrUnexpectedEOF
	}
	line = line[:len(line)-2]
	switch line[0] {
	case '+', '-', ':', '#', '_':
		return line, nil
	case '$', '=':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return line, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return line, err
		}
		return line[:1] + strconv.Quote(string(b[:n])), nil
	case '*', '%', '~':
		n, _ := strconv.Atoi(line[1:])
		if line[0] == '%' {
			n *= 2
		}
		parts := []string{}
		for range n {
			p, err := rawRESP(r)
			if err != nil {
				return p, err
			}
			parts = append(parts, p)
		}
		return line[:1] + "[" + strings.Join(parts, " ") + "]", nil
	}
	return line, io.ErrUnexpectedEOF
}

func rawDo(t *testing.T, nc net.Conn, r *bufio.Reader, args ...string) string {
	t.Helper()
	req := fmt.Sprintf("*%d\r\n", len(args))
	for _, a := range args {
		req += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
	}
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(nc, req); err != nil {
		t.Fatal(err)
	}
	got, err := rawRESP(r)
	if err != nil {
		t.Fatalf("%v: %v (read %q)", args, err, got)
	}
	return got
}

// The replies' shapes are redis-server 7.0.15's, read from a
// cluster-enabled server with slots 0-16383 assigned (CLUSTER
// ADDSLOTSRANGE 0 16383), in RESP2 and RESP3: SLOTS' nodes carry an empty
// metadata map, SHARDS is a map per shard and per node, INFO and NODES are
// verbatim text in RESP3.
func TestClusterReplyShapes(t *testing.T) {
	ts := startServer(t, testConfig{Topology: fixedShard{Shard{Self: idA, Nodes: []ShardNode{{ID: idA, Primary: true, Offset: 7}}}}})
	_, port, _ := net.SplitHostPort(ts.addr)
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	r := bufio.NewReader(nc)
	slots2 := `*[*[:0 :16383 *[$"127.0.0.1" :` + port + ` $"` + idA + `" *[]]]]`
	shards2 := `*[*[$"slots" *[:0 :16383] $"nodes" *[*[$"id" $"` + idA + `" $"port" :` + port +
		` $"ip" $"127.0.0.1" $"endpoint" $"127.0.0.1" $"role" $"master" $"replication-offset" :7 $"health" $"online"]]]]`
	info := "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\ncluster_slots_pfail:0\r\n" +
		"cluster_slots_fail:0\r\ncluster_known_nodes:1\r\ncluster_size:1\r\ncluster_current_epoch:0\r\ncluster_my_epoch:0\r\n" +
		"cluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n"
	nodes := idA + " 127.0.0.1:" + port + "@0 myself,master - 0 0 0 connected 0-16383\n"
	for _, c := range []struct{ args, want string }{
		{"CLUSTER SLOTS", slots2},
		{"CLUSTER SHARDS", shards2},
		{"CLUSTER INFO", `$` + strconv.Quote(info)},
		{"CLUSTER NODES", `$` + strconv.Quote(nodes)},
		{"CLUSTER MYID", `$"` + idA + `"`},
		{"CLUSTER KEYSLOT 123456789", ":12739"},
		{"CLUSTER KEYSLOT {user1000}.following", ":3443"},
		{"CLUSTER COUNTKEYSINSLOT 0", ":0"},
		{"CLUSTER GETKEYSINSLOT 0 10", "*[]"},
		{"ASKING", "+OK"},
		{"CLUSTER FOO", "-ERR unknown subcommand 'FOO'. Try CLUSTER HELP."},
		{"CLUSTER ADDSLOTS 1", "-ERR unknown subcommand 'ADDSLOTS'. Try CLUSTER HELP."},
		{"CLUSTER KEYSLOT", "-ERR wrong number of arguments for 'cluster|keyslot' command"},
		{"CLUSTER MYID x", "-ERR wrong number of arguments for 'cluster|myid' command"},
		{"CLUSTER", "-ERR wrong number of arguments for 'cluster' command"},
		{"ASKING x", "-ERR wrong number of arguments for 'asking' command"},
		{"CLUSTER COUNTKEYSINSLOT 16384", "-ERR Invalid slot"},
		{"CLUSTER COUNTKEYSINSLOT x", "-ERR value is not an integer or out of range"},
		{"CLUSTER GETKEYSINSLOT 1 -1", "-ERR Invalid slot or number of keys"},
		{"CLUSTER GETKEYSINSLOT 1 x", "-ERR value is not an integer or out of range"},
	} {
		if got := rawDo(t, nc, r, strings.Fields(c.args)...); got != c.want {
			t.Errorf("RESP2 %s = %s; want %s", c.args, got, c.want)
		}
	}
	rawDo(t, nc, r, "HELLO", "3")
	slots3 := strings.ReplaceAll(slots2, "*[]]", "%[]]")
	shards3 := `*[%[$"slots" *[:0 :16383] $"nodes" *[%[$"id"` + strings.SplitN(shards2, `*[*[$"id"`, 2)[1]
	for _, c := range []struct{ args, want string }{
		{"CLUSTER SLOTS", slots3},
		{"CLUSTER SHARDS", shards3},
		{"CLUSTER INFO", `=` + strconv.Quote("txt:"+info)},
		{"CLUSTER NODES", `=` + strconv.Quote("txt:"+nodes)},
	} {
		if got := rawDo(t, nc, r, strings.Fields(c.args)...); got != c.want {
			t.Errorf("RESP3 %s = %s; want %s", c.args, got, c.want)
		}
	}
	if got := rawDo(t, nc, r, "INFO", "cluster"); !strings.Contains(got, `# Cluster\r\ncluster_enabled:1\r\n`) {
		t.Errorf("INFO cluster = %s; want cluster_enabled:1", got)
	}
}

// A group's view: the leader first as master, followers as replicas at
// their addresses, a member with no known address left out of SLOTS and
// marked noaddr in NODES and fail in SHARDS.
func TestClusterGroupView(t *testing.T) {
	sh := Shard{Self: idB, Epoch: 4, Nodes: []ShardNode{
		{ID: idA, Addr: "127.0.0.1:7001", BusPort: 17001, Primary: true},
		{ID: idB, Addr: "127.0.0.1:7002", BusPort: 17002, Offset: 12},
		{ID: idC, BusPort: 17003},
	}}
	ts := startServer(t, testConfig{Topology: fixedShard{sh}})
	rdb := ts.client(t, proto(2))
	ctx := context.Background()
	slots, err := rdb.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := []redis.ClusterSlot{{Start: 0, End: 16383, Nodes: []redis.ClusterNode{
		{ID: idA, Addr: "127.0.0.1:7001"}, {ID: idB, Addr: "127.0.0.1:7002"}}}}
	if fmt.Sprint(slots) != fmt.Sprint(want) {
		t.Errorf("CLUSTER SLOTS = %v; want %v", slots, want)
	}
	nodes := do(t, rdb, "CLUSTER", "NODES").(string)
	wantNodes := idA + " 127.0.0.1:7001@17001 master - 0 0 4 connected 0-16383\n" +
		idB + " 127.0.0.1:7002@17002 myself,slave " + idA + " 0 0 4 connected\n" +
		idC + " :0@0 slave,noaddr " + idA + " 0 0 4 disconnected\n"
	if nodes != wantNodes {
		t.Errorf("CLUSTER NODES =\n%s\nwant\n%s", nodes, wantNodes)
	}
	shards, err := rdb.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%+v", shards)
	wantShards := "[{Slots:[{Start:0 End:16383}] Nodes:[" +
		"{ID:" + idA + " Endpoint:127.0.0.1 IP:127.0.0.1 Hostname: Port:7001 TLSPort:0 Role:master ReplicationOffset:0 Health:online} " +
		"{ID:" + idB + " Endpoint:127.0.0.1 IP:127.0.0.1 Hostname: Port:7002 TLSPort:0 Role:replica ReplicationOffset:12 Health:online} " +
		"{ID:" + idC + " Endpoint:? IP: Hostname: Port:0 TLSPort:0 Role:replica ReplicationOffset:0 Health:fail}]}]"
	if got != wantShards {
		t.Errorf("CLUSTER SHARDS = %s; want %s", got, wantShards)
	}
	info := do(t, rdb, "CLUSTER", "INFO").(string)
	if !strings.HasPrefix(info, "cluster_state:ok\r\n") || !strings.Contains(info, "cluster_known_nodes:3\r\n") ||
		!strings.Contains(info, "cluster_current_epoch:4\r\n") {
		t.Errorf("CLUSTER INFO = %q", info)
	}
}

// With no leader the shard is down: cluster_state:fail, every slot failed.
func TestClusterInfoDown(t *testing.T) {
	ts := startServer(t, testConfig{Topology: fixedShard{Shard{Self: idA, Down: true,
		Nodes: []ShardNode{{ID: idA, Addr: "127.0.0.1:7001", Primary: true}}}}})
	info := do(t, ts.client(t, proto(2)), "CLUSTER", "INFO").(string)
	if !strings.HasPrefix(info, "cluster_state:fail\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:0\r\n") ||
		!strings.Contains(info, "cluster_slots_fail:16384\r\n") {
		t.Errorf("CLUSTER INFO = %q; want cluster_state:fail", info)
	}
}

// COUNTKEYSINSLOT and GETKEYSINSLOT count RL.CHECK's state and override
// keys in their subject's slot, and other keys in their own.
func TestClusterKeysInSlot(t *testing.T) {
	ts := startServer(t, testConfig{Topology: fixedShard{Shard{Self: idA, Nodes: []ShardNode{{ID: idA, Primary: true}}}}})
	rdb := ts.client(t, proto(2))
	do(t, rdb, "RL.POLICY", "SET", "free", "TOKEN", "10/s", "20")
	do(t, rdb, "RL.CHECK", "free", "alice")
	do(t, rdb, "RL.OVERRIDE", "SET", "free", "alice", "TOKEN", "1/s", "5")
	do(t, rdb, "RL.TOKEN", "{alice}.x", "1/s", "5")
	do(t, rdb, "RL.TOKEN", "bob", "1/s", "5")
	slot := do(t, rdb, "CLUSTER", "KEYSLOT", "alice").(int64)
	if n := do(t, rdb, "CLUSTER", "COUNTKEYSINSLOT", slot); n != int64(3) {
		t.Errorf("COUNTKEYSINSLOT %d = %v; want 3 (pol:free:token:alice, ovr:free:alice, {alice}.x)", slot, n)
	}
	keys := fmt.Sprint(do(t, rdb, "CLUSTER", "GETKEYSINSLOT", slot, 2))
	if strings.Count(keys, " ")+1 != 2 {
		t.Errorf("GETKEYSINSLOT %d 2 = %s; want 2 keys", slot, keys)
	}
	all := fmt.Sprint(do(t, rdb, "CLUSTER", "GETKEYSINSLOT", slot, 10))
	for _, k := range []string{"pol:free:token:alice", "ovr:free:alice", "{alice}.x"} {
		if !strings.Contains(all, k) {
			t.Errorf("GETKEYSINSLOT %d 10 = %s; want %s in it", slot, all, k)
		}
	}
	bob := do(t, rdb, "CLUSTER", "KEYSLOT", "bob").(int64)
	if n := do(t, rdb, "CLUSTER", "COUNTKEYSINSLOT", bob); n != int64(1) {
		t.Errorf("COUNTKEYSINSLOT %d (bob) = %v; want 1", bob, n)
	}
}
