package commands

import (
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

// Router is a sharded cluster's routing, owned by the process.
type Router interface {
	// Route returns nil if this node's data group serves slot, else the
	// reply that redirects the client: MOVED slot host:port to the
	// owning group's leader, or CLUSTERDOWN while the slot has no owner
	// or its owner no known leader. Either means nothing was applied.
	Route(slot int) error
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

// route checks a command outside MULTI: nil if it runs here.
func (s *session) route(cmd *command, args [][]byte) error {
	slot, err := commandSlot(cmd, args)
	if err != nil || slot < 0 {
		return err
	}
	return s.h.cfg.Router.Route(slot)
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
