package commands

import (
	"net"
	"strconv"
	"strings"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/internal/parse"
	"github.com/sluice-rl/sluice/keyslot"
	"github.com/sluice-rl/sluice/policy"
)

// The Redis Cluster protocol: CLUSTER INFO, SLOTS, SHARDS, NODES, MYID,
// KEYSLOT, COUNTKEYSINSLOT, GETKEYSINSLOT and HELP, and ASKING. A single
// node and a replicated group each answer as one shard that owns all 16384
// slots, so cluster clients work against them unchanged (docs/cluster.md).

// Topology is the shard layout the CLUSTER commands report, owned by the
// process behind them: a single node, a replicated group (one shard
// owning every slot), or a sharded cluster's data groups. Safe for
// concurrent use.
type Topology interface {
	// ClusterShards returns this node's current view of the shards: at
	// least one, this node's own first.
	ClusterShards() []Shard
}

// Shard is one shard as a node sees it.
type Shard struct {
	// Self is this node's id: 40 hex digits, stable across restarts (the
	// same in every shard of a view).
	Self string
	// Slots are the inclusive slot ranges the shard owns, in order; nil
	// is every slot (a single node or group).
	Slots [][2]int
	// Nodes are the shard's nodes, the primary first (exactly one has
	// Primary set).
	Nodes []ShardNode
	// Epoch is the configuration epoch reported by CLUSTER INFO and NODES.
	Epoch int64
	// Down is set while the shard cannot take writes (a group with no
	// leader): CLUSTER INFO reports cluster_state:fail.
	Down bool
}

// ShardNode is one node of a shard.
type ShardNode struct {
	ID string // 40 hex digits
	// Addr is the node's RESP address, host:port. "" is unknown: the node
	// is reported failed and left out of CLUSTER SLOTS; for Self, ""
	// means the address the asking client connected to.
	Addr    string
	BusPort int   // reported after '@' in CLUSTER NODES (the Raft port; 0: none)
	Primary bool  // the leader, or the single node
	Offset  int64 // replication offset: the node's applied log index
}

func init() {
	register(
		&command{name: "cluster", arity: -2, run: cmdCluster, group: "cluster", since: "0.1.0",
			summary:    "Answers the Redis Cluster protocol: this node's shard, which owns all 16384 slots.",
			complexity: "O(1); NODES, SLOTS, SHARDS O(nodes); COUNTKEYSINSLOT, GETKEYSINSLOT O(keys)",
			subs: []string{"info", "slots", "shards", "nodes", "myid", "keyslot", "countkeysinslot",
				"getkeysinslot", "proxied", "help"}},
		&command{name: "asking", arity: 1, flags: flagFast, run: cmdAsking, group: "cluster", since: "0.1.0",
			summary: "Accepted for cluster clients; no slot is ever migrating, so it has no effect.", complexity: "O(1)"},
	)
}

var clusterHelp = []string{
	"CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"COUNTKEYSINSLOT <slot>",
	"    Return the number of keys in <slot>.",
	"GETKEYSINSLOT <slot> <count>",
	"    Return key names stored by current node in a slot.",
	"INFO",
	"    Return information about the cluster.",
	"KEYSLOT <key>",
	"    Return the hash slot for <key>.",
	"MYID",
	"    Return the node id.",
	"NODES",
	"    Return cluster configuration seen by node. Output format:",
	"    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
	"SLOTS",
	"    Return information about slots range mappings. Each range is made of:",
	"    start, end, master and replicas IP addresses, ports and ids",
	"SHARDS",
	"    Return information about slot range mappings and the nodes associated with them.",
	"PROXIED",
	"    Mark this connection as a --cluster-proxy node's: its commands are never proxied again (MOVED instead).",
	"HELP",
	"    Print this help.",
}

// clusterArity is each CLUSTER subcommand's argument count, the name and
// subcommand included.
var clusterArity = map[string]int{"info": 2, "slots": 2, "shards": 2, "nodes": 2, "myid": 2, "keyslot": 3,
	"countkeysinslot": 3, "getkeysinslot": 4, "proxied": 2, "help": 2}

func cmdCluster(s *session, args [][]byte) {
	// arguments
	sub := strings.ToLower(string(args[1]))
	n, known := clusterArity[sub]
	if !known {
		s.writeError(errUnknownSubcommand(args[1], "CLUSTER"))
		return
	}
	if len(args) != n {
		s.writeError(errWrongArgs("cluster|" + sub))
		return
	}
	if sub == "help" {
		s.writeArray(len(clusterHelp))
		for _, l := range clusterHelp {
			s.writeSimple(l)
		}
		return
	}
	if sub == "keyslot" {
		s.writeInt(int64(keyslot.Of(args[2])))
		return
	}
	if sub == "proxied" {
		s.proxied = true // route.go
		s.writeOK()
		return
	}
	topo := s.h.cfg.Topology
	if topo == nil {
		s.writeError(errNoCluster)
		return
	}
	switch sub {
	case "countkeysinslot":
		s.clusterCountKeys(args[2])
		return
	case "getkeysinslot":
		s.clusterGetKeys(args[2], args[3])
		return
	}
	// operation
	shards := topo.ClusterShards()
	for i := range shards {
		s.resolveSelf(&shards[i])
	}
	// reply
	switch sub {
	case "myid":
		s.writeBulkString(shards[0].Self)
	case "info":
		s.writeVerbatim(clusterInfo(shards))
	case "nodes":
		s.writeVerbatim(clusterNodes(shards))
	case "slots":
		s.writeClusterSlots(shards)
	case "shards":
		s.writeClusterShards(shards)
	}
}

// clusterCountKeys answers CLUSTER COUNTKEYSINSLOT slot.
func (s *session) clusterCountKeys(arg []byte) {
	slot, ok := parse.Int(arg)
	if !ok {
		s.writeError(errNotInteger)
		return
	}
	if slot < 0 || slot >= keyslot.Slots {
		s.writeError(errInvalidSlot)
		return
	}
	count, err := s.keysInSlot(int(slot), -1, nil)
	if err != nil {
		s.writeError(err)
		return
	}
	s.writeInt(count)
}

// clusterGetKeys answers CLUSTER GETKEYSINSLOT slot count.
func (s *session) clusterGetKeys(slotArg, countArg []byte) {
	slot, ok := parse.Int(slotArg)
	max, ok2 := parse.Int(countArg)
	if !ok || !ok2 {
		s.writeError(errNotInteger)
		return
	}
	if slot < 0 || slot >= keyslot.Slots || max < 0 {
		s.writeError(errInvalidSlotOrCount)
		return
	}
	var keys [][]byte
	if _, err := s.keysInSlot(int(slot), max, &keys); err != nil {
		s.writeError(err)
		return
	}
	s.writeArray(len(keys))
	for _, k := range keys {
		s.writeBulk(k)
	}
}

func cmdAsking(s *session, args [][]byte) { s.writeOK() }

// resolveSelf fills in this node's address where the topology leaves it
// to the connection: the address the client reached this node on.
func (s *session) resolveSelf(shard *Shard) {
	for i := range shard.Nodes {
		if n := &shard.Nodes[i]; n.ID == shard.Self && n.Addr == "" {
			n.Addr = s.conn.LocalAddr()
		}
	}
}

// keysInSlot walks the whole key space with SCAN and counts the keys in
// slot, appending up to max of them to keys (max < 0: none). There is no
// per-slot index: the cost is one pass over every key (docs/cluster.md).
func (s *session) keysInSlot(slot int, max int64, keys *[][]byte) (int64, error) {
	var count int64
	cursor := uint64(0)
	for {
		next, err := s.h.ks.Scan(s.conn.Now(), cursor, 1024, func(key []byte, _ algorithms.Algo) bool {
			if policy.StoredSlot(key) != slot {
				return true
			}
			count++
			if keys != nil && int64(len(*keys)) < max {
				*keys = append(*keys, append([]byte(nil), key...))
			}
			return true
		})
		if err != nil {
			return 0, err
		}
		if next == 0 || (keys != nil && int64(len(*keys)) >= max) {
			return count, nil
		}
		cursor = next
	}
}

// splitAddr splits host:port; an unknown or unparsable address is ("", 0).
func splitAddr(addr string) (string, int) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return "", 0
	}
	return host, p
}

// primary returns the shard's primary.
func (sh Shard) primary() ShardNode {
	for _, n := range sh.Nodes {
		if n.Primary {
			return n
		}
	}
	return ShardNode{}
}

// ranges returns the shard's slot ranges: Slots, or every slot.
func (sh Shard) ranges() [][2]int {
	if sh.Slots == nil {
		return [][2]int{{0, keyslot.Slots - 1}}
	}
	return sh.Slots
}

// slotCount is the number of slots the shard owns.
func (sh Shard) slotCount() int {
	n := 0
	for _, r := range sh.ranges() {
		n += r[1] - r[0] + 1
	}
	return n
}

// clusterInfo is CLUSTER INFO's text, with Redis 7's fields in its order:
// the state is ok while every slot has an owner whose shard is up.
func clusterInfo(shards []Shard) string {
	assigned, ok, fail, nodes, size := 0, 0, 0, 0, 0
	var current int64
	for _, sh := range shards {
		n := sh.slotCount()
		assigned += n
		if sh.Down {
			fail += n
		} else {
			ok += n
		}
		if n > 0 {
			size++
		}
		nodes += len(sh.Nodes)
		current = max(current, sh.Epoch)
	}
	state := "ok"
	if ok != keyslot.Slots {
		state = "fail"
	}
	var b strings.Builder
	for _, kv := range [][2]string{
		{"cluster_state", state},
		{"cluster_slots_assigned", strconv.Itoa(assigned)},
		{"cluster_slots_ok", strconv.Itoa(ok)},
		{"cluster_slots_pfail", "0"},
		{"cluster_slots_fail", strconv.Itoa(fail)},
		{"cluster_known_nodes", strconv.Itoa(nodes)},
		{"cluster_size", strconv.Itoa(size)},
		{"cluster_current_epoch", strconv.FormatInt(current, 10)},
		{"cluster_my_epoch", strconv.FormatInt(shards[0].Epoch, 10)},
		{"cluster_stats_messages_sent", "0"},
		{"cluster_stats_messages_received", "0"},
		{"total_cluster_links_buffer_limit_exceeded", "0"},
	} {
		b.WriteString(kv[0] + ":" + kv[1] + "\r\n")
	}
	return b.String()
}

// clusterNodes is CLUSTER NODES's text: one line per node, Redis's
// "<id> <ip:port@cport> <flags> <master> <ping-sent> <pong-recv>
// <config-epoch> <link-state> [<slot range> …]". A node with no known
// address is ":0@0" with the noaddr flag, as Redis writes one.
func clusterNodes(shards []Shard) string {
	var b strings.Builder
	for _, sh := range shards {
		primary := sh.primary()
		for _, n := range sh.Nodes {
			host, port := splitAddr(n.Addr)
			flags, master, link, bus := "", "-", "connected", n.BusPort
			if n.ID == sh.Self {
				flags = "myself,"
			}
			if n.Primary {
				flags += "master"
			} else {
				flags += "slave"
				master = primary.ID
			}
			if port == 0 {
				flags += ",noaddr"
				link, bus = "disconnected", 0
			}
			addr := host + ":" + strconv.Itoa(port)
			if strings.Contains(host, ":") {
				addr = "[" + host + "]:" + strconv.Itoa(port)
			}
			b.WriteString(n.ID + " " + addr + "@" + strconv.Itoa(bus) + " " + flags + " " + master + " 0 0 " +
				strconv.FormatInt(sh.Epoch, 10) + " " + link)
			if n.Primary {
				for _, r := range sh.ranges() {
					b.WriteString(" " + strconv.Itoa(r[0]))
					if r[1] != r[0] {
						b.WriteString("-" + strconv.Itoa(r[1]))
					}
				}
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// writeClusterSlots writes CLUSTER SLOTS: each range of each shard,
// served by its primary then each replica whose address is known, each
// as Redis 7's [ip, port, id, {metadata}].
func (s *session) writeClusterSlots(shards []Shard) {
	n := 0
	for _, sh := range shards {
		n += len(sh.ranges())
	}
	s.writeArray(n)
	for _, sh := range shards {
		var nodes []ShardNode
		for _, n := range sh.Nodes {
			if _, port := splitAddr(n.Addr); port != 0 || n.Primary {
				nodes = append(nodes, n)
			}
		}
		for _, r := range sh.ranges() {
			s.writeArray(2 + len(nodes))
			s.writeInt(int64(r[0]))
			s.writeInt(int64(r[1]))
			for _, n := range nodes {
				host, port := splitAddr(n.Addr)
				s.writeArray(4)
				s.writeBulkString(host)
				s.writeInt(int64(port))
				s.writeBulkString(n.ID)
				s.writeMap(0)
			}
		}
	}
}

// writeClusterShards writes CLUSTER SHARDS: each shard's slots (pairs of
// range ends) and its nodes with Redis 7's fields (port only when known,
// as Redis).
func (s *session) writeClusterShards(shards []Shard) {
	s.writeArray(len(shards))
	for _, sh := range shards {
		s.writeMap(2)
		s.writeBulkString("slots")
		rs := sh.ranges()
		s.writeArray(2 * len(rs))
		for _, r := range rs {
			s.writeInt(int64(r[0]))
			s.writeInt(int64(r[1]))
		}
		s.writeBulkString("nodes")
		s.writeShardNodes(sh)
	}
}

// writeShardNodes writes a shard's nodes for CLUSTER SHARDS.
func (s *session) writeShardNodes(sh Shard) {
	s.writeArray(len(sh.Nodes))
	for _, n := range sh.Nodes {
		host, port := splitAddr(n.Addr)
		fields := 6
		if port != 0 {
			fields++
		}
		s.writeMap(fields)
		s.writeBulkString("id")
		s.writeBulkString(n.ID)
		if port != 0 {
			s.writeBulkString("port")
			s.writeInt(int64(port))
		}
		endpoint := host
		if port == 0 {
			endpoint = "?"
		}
		role, health := "replica", "online"
		if n.Primary {
			role = "master"
		}
		if port == 0 || (n.Primary && sh.Down) {
			health = "fail"
		}
		for _, kv := range [][2]string{{"ip", host}, {"endpoint", endpoint}, {"role", role}} {
			s.writeBulkString(kv[0])
			s.writeBulkString(kv[1])
		}
		s.writeBulkString("replication-offset")
		s.writeInt(n.Offset)
		s.writeBulkString("health")
		s.writeBulkString(health)
	}
}
