package commands

import (
	"errors"

	"github.com/sluice-rl/sluice/internal/replyerr"
	"github.com/sluice-rl/sluice/keyslot"
)

// Routing in a sharded cluster (docs/cluster.md): every command with keys
// is checked before it runs. Keys in different slots answer CROSSSLOT, as
// in Redis Cluster; a slot whose data group is not this node's answers
// MOVED to that group's leader (Router). The slot of a key is keyslot.Of
// of what the command's key specs locate: RL.CHECK's subjects, RL.ALL's
// keys, the scripts' KEYS. Inside MULTI every queued command must be in
// the transaction's one slot. Keyless commands (INFO, DBSIZE, SCAN,
// FLUSHALL, CLUSTER …) are node-local.
//
// With a Proxy (--cluster-proxy), a command outside MULTI that would
// answer MOVED is sent on to the owning group's leader instead, and its
// reply relayed byte for byte, for plain clients that cannot follow
// redirects. A connection that ran CLUSTER PROXIED (another node's proxy)
// is never proxied again, so a command crosses at most one hop. MULTI is
// not proxied: a queued command of another group's slot answers MOVED, as
// without a proxy, and EXEC then EXECABORT; a transaction runs whole on
// one group or not at all.

// Router is a sharded cluster's routing, owned by the process.
type Router interface {
	// Route returns nil if this node's data group serves slot, else the
	// reply that redirects the client: MOVED slot host:port to the
	// owning group's leader, or CLUSTERDOWN while the slot has no owner
	// or its owner no known leader. Either means nothing was applied.
	Route(slot int) error
}

// Proxy sends a command on to the node that serves its slot
// (--cluster-proxy), owned by the process. Safe for concurrent use.
type Proxy interface {
	// Proxy runs args, a command on a key of slot, on the leader of the
	// data group that owns slot and returns its reply, raw RESP exactly
	// as that node sent it (error replies included), in the reply form
	// resp3 and named give. Its errors: CLUSTERDOWN if the command never
	// left this node (nothing was applied), UNKNOWN if the connection
	// broke after it was sent.
	Proxy(slot int, resp3, named bool, args [][]byte) ([]byte, error)
}

var errCrossSlot = replyerr.New(replyerr.CROSSSLOT, "Keys in request don't hash to the same slot")

// commandSlot returns the one slot of cmd's keys in args, or -1 if it has
// none; CROSSSLOT if they span slots.
func commandSlot(cmd *command, args [][]byte) (int, error) {
	var buf [8]keyRef
	refs, _ := commandKeys(cmd, args, buf[:0])
	slot := -1
	for _, k := range refs {
		s := keyslot.Of(args[k.pos])
		if slot >= 0 && s != slot {
			return -1, errCrossSlot
		}
		slot = s
	}
	return slot, nil
}

// route checks a command outside MULTI: nil if it runs here. proxy is
// its slot if it is to be proxied (see Proxy), else -1.
func (s *session) route(cmd *command, args [][]byte) (proxy int, err error) {
	slot, err := commandSlot(cmd, args)
	if err != nil || slot < 0 {
		return -1, err
	}
	err = s.h.cfg.Router.Route(slot)
	var re replyerr.Error
	if err != nil && s.h.cfg.Proxy != nil && !s.proxied && errors.As(err, &re) && re.Code() == replyerr.MOVED {
		return slot, err
	}
	return -1, err
}

// proxy runs cmd on the node that serves slot and writes its reply. A
// broken connection after sending leaves a write's outcome unknown; a
// command that writes nothing may run again, so it answers CLUSTERDOWN,
// which clients retry.
func (s *session) proxy(cmd *command, slot int, args [][]byte) {
	reply, err := s.h.cfg.Proxy.Proxy(slot, s.resp3.Load(), s.named, args)
	var re replyerr.Error
	if err != nil && cmd.flags&flagWrite == 0 && errors.As(err, &re) && re.Code() == replyerr.UNKNOWN {
		err = replyerr.New(replyerr.CLUSTERDOWN, "the connection to the slot's owner broke; nothing was changed")
	}
	if err != nil {
		s.writeError(err)
		return
	}
	s.conn.Out = append(s.conn.Out, reply...)
}

// routeTx checks a command queued in MULTI: its keys must be in the
// transaction's slot, which the first keyed command sets, and that slot
// this node's group's.
func (s *session) routeTx(cmd *command, args [][]byte) error {
	if s.h.cfg.Router == nil {
		return nil
	}
	slot, err := commandSlot(cmd, args)
	switch {
	case err != nil || slot < 0:
		return err
	case s.tx.slot != 0 && s.tx.slot-1 != slot:
		return errCrossSlot
	}
	if err := s.h.cfg.Router.Route(slot); err != nil {
		return err
	}
	s.tx.slot = slot + 1
	return nil
}
