package cluster

import (
	"errors"
	"strconv"

	"github.com/sluice-rl/sluice/internal/replyerr"
)

// With --cluster-proxy, a node of a sharded cluster that receives a
// command for a slot its data group does not own sends it on to the
// owning group's leader and relays the reply byte for byte, for plain
// clients that cannot follow MOVED (docs/cluster.md, "Plain clients").
// The command travels as the client sent it, over pooled, pipelined
// connections to the leader's RESP port (forward.go), one pool per reply
// form: RESP2 or RESP3, plain or named decision replies. Each pooled
// connection first runs CLUSTER PROXIED, so that the node it reaches
// answers MOVED rather than proxying again: a command crosses at most one
// hop, whatever two nodes' views of the slot table say.

// proxyHello is what a proxy connection of reply form i sends after AUTH:
// bit 0 is RESP3, bit 1 named replies.
func proxyHello(i int) [][][]byte {
	hello := [][][]byte{{[]byte("CLUSTER"), []byte("PROXIED")}}
	if i&1 != 0 {
		hello = append(hello, [][]byte{[]byte("HELLO"), []byte("3")})
	}
	if i&2 != 0 {
		hello = append(hello, [][]byte{[]byte("CLIENT"), []byte("NAMED-REPLY"), []byte("ON")})
	}
	return hello
}

// Proxy runs args, a command on a key of slot, on the leader of the data
// group that owns slot, and returns that node's reply exactly as it sent
// it, error replies included (a MOVED from a node whose table differs
// passes through as it is). resp3 and named give the reply form of the
// client the reply goes to. Its own errors: CLUSTERDOWN when the command
// never left this node (no owner, no known leader, no connection), which
// means nothing was applied; UNKNOWN when the connection broke after it
// was sent. Safe for concurrent use.
func (n *Node) Proxy(slot int, resp3, named bool, args [][]byte) ([]byte, error) {
	meta := n.cfg.MetaNode
	if meta == nil {
		return nil, errSlotUnserved
	}
	g, leader := meta.SlotOwner(slot)
	switch {
	case g == 0:
		return nil, errSlotUnserved
	case leader == "":
		return nil, replyerr.New(replyerr.CLUSTERDOWN, "the data group "+strconv.Itoa(int(g))+" that owns slot "+
			strconv.Itoa(slot)+" has no known leader; nothing was applied")
	}
	i := 0
	if resp3 {
		i |= 1
	}
	if named {
		i |= 2
	}
	reply, err := n.proxies[i].call(leader, args...)
	if errors.Is(err, errNotApplied) {
		return nil, replyerr.New(replyerr.CLUSTERDOWN, "cannot reach "+leader+", the leader of the data group "+
			strconv.Itoa(int(g))+" that owns slot "+strconv.Itoa(slot)+"; nothing was applied")
	}
	return reply, err
}

// newProxies returns the proxy's pools, one per reply form.
func newProxies(cfg Config) [4]*forwarder {
	var out [4]*forwarder
	for i := range out {
		out[i] = newForwarder(cfg.Password, cfg.RESPTLS)
		out[i].hello, out[i].raw = proxyHello(i), true
	}
	return out
}
