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
// groups' leaders carry it out. SLUICE.MIGRATIONS lists the migrations
// the meta group records, with their state.

// Resharder is a sharded cluster's resharding, owned by the process.
type Resharder interface {
	// Migrate records the move of slots lo-hi to group to, aborted if
	// not installed within timeout, and returns its epoch.
	Migrate(lo, hi int, to uint16, timeout time.Duration) (uint64, error)
	// MigrationList returns the recorded migrations by epoch.
	MigrationList() []Migration
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

// defaultMigrateTimeout is SLUICE.MIGRATE's TIMEOUT when none is given.
const defaultMigrateTimeout = 10 * time.Second

func init() {
	register(
		&command{name: "sluice.migrate", arity: -3, maxArgs: 5, flags: flagAdmin, run: cmdMigrate, group: "cluster", since: "0.2.0",
			summary:    "Moves a slot or a range of slots to another data group of a sharded cluster; returns the migration's epoch.",
			complexity: "O(N) where N is the number of keys in the slots",
			arguments: []argDoc{{name: "slots", typ: "string"}, {name: "group", typ: "integer"},
				{name: "timeout", typ: "integer", token: "TIMEOUT", optional: true}}},
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
