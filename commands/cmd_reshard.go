package commands

import (
	"bytes"
	"strconv"
	"time"

	"github.com/sluice-rl/sluice/internal/parse"
	"github.com/sluice-rl/sluice/keyslot"
)

// Resharding a sharded cluster (docs/cluster.md, "Resharding"):
// SLUICE.MIGRATE asks the meta group to move a slot or a range of slots
// to another data group, and returns the migration's epoch at once; the
// groups' leaders carry it out. SLUICE.REBALANCE records the migrations
// that spread the slots evenly over the data groups (a new one, or all
// but a draining one). SLUICE.MIGRATIONS lists the migrations the meta
// group records, with their state. SLUICE.FORGET removes a drained
// group's record.

// Resharder is a sharded cluster's resharding, owned by the process.
type Resharder interface {
	// Migrate records the move of slots lo-hi to group to, aborted if
	// not installed within timeout, and returns its epoch.
	Migrate(lo, hi int, to uint16, timeout time.Duration) (uint64, error)
	// Rebalance records the migrations that spread the slots evenly over
	// groups (all if none), at most chunk slots each, and returns their
	// epochs.
	Rebalance(groups []uint16, chunk int, timeout time.Duration) ([]uint64, error)
	// MigrationList returns the recorded migrations by epoch.
	MigrationList() []Migration
	// Forget removes the record of group, which owns no slot.
	Forget(group uint16) error
}

// Migration is one slot migration as SLUICE.MIGRATIONS reports it.
type Migration struct {
	Epoch    uint64
	Lo, Hi   int
	From, To int
	State    string    // planned, committed, aborted
	Started  time.Time // when the meta group recorded it
	Deadline time.Time
	Finished time.Time // zero while planned
}

// defaultMigrateTimeout is SLUICE.MIGRATE's TIMEOUT when none is given;
// defaultChunk SLUICE.REBALANCE's CHUNK.
const (
	defaultMigrateTimeout = 10 * time.Second
	defaultChunk          = 256
)

func init() {
	register(
		&command{name: "sluice.migrate", arity: -3, maxArgs: 5, flags: flagAdmin, run: cmdMigrate, group: "cluster", since: "0.2.0",
			summary:    "Moves a slot or a range of slots to another data group of a sharded cluster; returns the migration's epoch.",
			complexity: "O(N) where N is the number of keys in the slots",
			arguments: []argDoc{{name: "slots", typ: "string"}, {name: "group", typ: "integer"},
				{name: "timeout", typ: "integer", token: "TIMEOUT", optional: true}}},
		&command{name: "sluice.rebalance", arity: -1, flags: flagAdmin, run: cmdRebalance, group: "cluster", since: "0.2.0",
			summary:    "Records the migrations that spread the slots evenly over the data groups (all, or those named); returns their epochs.",
			complexity: "O(N) where N is the number of slots",
			arguments: []argDoc{{name: "chunk", typ: "integer", token: "CHUNK", optional: true},
				{name: "timeout", typ: "integer", token: "TIMEOUT", optional: true},
				{name: "group", typ: "integer", token: "GROUPS", optional: true, multiple: true}}},
		&command{name: "sluice.forget", arity: 2, flags: flagAdmin, run: cmdForget, group: "cluster", since: "0.2.0",
			summary: "Removes a drained data group, which owns no slot, from the cluster's records.", complexity: "O(1)",
			arguments: []argDoc{{name: "group", typ: "integer"}}},
		&command{name: "sluice.migrations", arity: 1, flags: flagAdmin, run: cmdMigrations, group: "cluster", since: "0.2.0",
			summary: "Lists the slot migrations of a sharded cluster with their state.", complexity: "O(N)"},
	)
}

var errMigrateSlots = replyError("slots must be a slot or a range lo-hi of slots 0-16383")

func cmdMigrate(s *session, args [][]byte) {
	rs := s.h.cfg.Resharder
	if rs == nil {
		s.writeError(errNoMeta)
		return
	}
	lo, hi, ok := slotRangeArg(args[1])
	if !ok {
		s.writeError(errMigrateSlots)
		return
	}
	group, ok := parse.Int(args[2])
	if !ok || group < 1 || group > 65535 {
		s.writeError(errNotInteger)
		return
	}
	timeout := defaultMigrateTimeout
	switch {
	case len(args) == 5 && equalFold(args[3], "timeout"):
		ms, ok := parse.Int(args[4])
		if !ok || ms <= 0 {
			s.writeError(errNotInteger)
			return
		}
		timeout = time.Duration(ms) * time.Millisecond
	case len(args) != 3:
		s.writeError(errSyntax)
		return
	}
	epoch, err := rs.Migrate(lo, hi, uint16(group), timeout)
	if err != nil {
		s.writeError(err)
		return
	}
	s.writeInt(int64(epoch))
}

// slotRangeArg reads "slot" or "lo-hi".
func slotRangeArg(b []byte) (lo, hi int, ok bool) {
	a, c, found := bytes.Cut(b, []byte("-"))
	l, ok1 := parse.Int(a)
	h := l
	ok2 := true
	if found {
		h, ok2 = parse.Int(c)
	}
	if !ok1 || !ok2 || l < 0 || h < l || h >= keyslot.Slots {
		return 0, 0, false
	}
	return int(l), int(h), true
}

func cmdMigrations(s *session, args [][]byte) {
	rs := s.h.cfg.Resharder
	if rs == nil {
		s.writeError(errNoMeta)
		return
	}
	list := rs.MigrationList()
	s.writeArray(len(list))
	for _, m := range list {
		slots := strconv.Itoa(m.Lo) + "-" + strconv.Itoa(m.Hi)
		s.writeMap(8)
		s.writeBulkString("epoch")
		s.writeInt(int64(m.Epoch))
		s.writeBulkString("slots")
		s.writeBulkString(slots)
		s.writeBulkString("from")
		s.writeInt(int64(m.From))
		s.writeBulkString("to")
		s.writeInt(int64(m.To))
		s.writeBulkString("state")
		s.writeBulkString(m.State)
		s.writeBulkString("started-ms")
		s.writeInt(m.Started.UnixMilli())
		s.writeBulkString("deadline-ms")
		s.writeInt(m.Deadline.UnixMilli())
		s.writeBulkString("duration-ms")
		if m.Finished.IsZero() {
			s.writeInt(-1)
		} else {
			s.writeInt(m.Finished.Sub(m.Started).Milliseconds())
		}
	}
}

func cmdRebalance(s *session, args [][]byte) {
	rs := s.h.cfg.Resharder
	if rs == nil {
		s.writeError(errNoMeta)
		return
	}
	chunk, timeout := defaultChunk, defaultMigrateTimeout
	var groups []uint16
	for i := 1; i < len(args); i++ {
		switch {
		case equalFold(args[i], "groups"):
			for i++; i < len(args); i++ {
				g, ok := parse.Int(args[i])
				if !ok || g < 1 || g > 65535 {
					s.writeError(errNotInteger)
					return
				}
				groups = append(groups, uint16(g))
			}
		case i+1 < len(args) && (equalFold(args[i], "chunk") || equalFold(args[i], "timeout")):
			v, ok := parse.Int(args[i+1])
			if !ok || v <= 0 || v > keyslot.Slots && equalFold(args[i], "chunk") {
				s.writeError(errNotInteger)
				return
			}
			if equalFold(args[i], "chunk") {
				chunk = int(v)
			} else {
				timeout = time.Duration(v) * time.Millisecond
			}
			i++
		default:
			s.writeError(errSyntax)
			return
		}
	}
	epochs, err := rs.Rebalance(groups, chunk, timeout)
	if err != nil && len(epochs) == 0 {
		s.writeError(err)
		return
	}
	s.writeArray(len(epochs))
	for _, e := range epochs {
		s.writeInt(int64(e))
	}
}

func cmdForget(s *session, args [][]byte) {
	rs := s.h.cfg.Resharder
	if rs == nil {
		s.writeError(errNoMeta)
		return
	}
	g, ok := parse.Int(args[1])
	if !ok || g < 1 || g > 65535 {
		s.writeError(errNotInteger)
		return
	}
	s.replyOK(rs.Forget(uint16(g)))
}
