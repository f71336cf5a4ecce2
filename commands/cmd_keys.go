package commands

import (
	"math"
	"strconv"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/glob"
	"github.com/sluice-rl/sluice/internal/parse"
)

// The key-space commands, with Redis's arguments and replies. Every key's
// state expires exactly when it becomes equal to "absent", so a key that
// exists always has a TTL.

func init() {
	keys := []argDoc{{name: "key", typ: "key", multiple: true}}
	one := []argDoc{{name: "key", typ: "key"}}
	flushArgs := []argDoc{{name: "async", typ: "pure-token", token: "ASYNC", optional: true}}
	register(
		&command{name: "del", arity: -2, flags: flagWrite, run: cmdDel, group: "generic", since: "0.1.0",
			summary: "Deletes one or more keys.", complexity: "O(N)", arguments: keys,
			keySpecs: []keySpec{keyRange(keyRM|keyDelete, 1, -1, 1)}},
		&command{name: "unlink", arity: -2, flags: flagWrite | flagFast, run: cmdDel, group: "generic", since: "0.1.0",
			summary: "Deletes one or more keys (the same as DEL: deleting a limiter's state is O(1)).", complexity: "O(N)",
			arguments: keys,
			keySpecs:  []keySpec{keyRange(keyRM|keyDelete, 1, -1, 1)}},
		&command{name: "exists", arity: -2, flags: flagReadOnly | flagFast, run: cmdExists, group: "generic", since: "0.1.0",
			summary: "Counts how many of the keys exist.", complexity: "O(N)", arguments: keys,
			keySpecs: []keySpec{keyRange(keyRO, 1, -1, 1)}},
		&command{name: "type", arity: 2, flags: flagReadOnly | flagFast, run: cmdType, group: "generic", since: "0.1.0",
			summary: "Names the algorithm whose state the key holds (rl-token, …) or none.", complexity: "O(1)",
			arguments: one, keySpecs: []keySpec{keyRange(keyRO, 1, 0, 1)}},
		&command{name: "pttl", arity: 2, flags: flagReadOnly | flagFast, run: cmdPTTL, group: "generic", since: "0.1.0",
			summary:    "Milliseconds until the key's state is back to its initial state and disappears, -2 if absent.",
			complexity: "O(1)", arguments: one, keySpecs: []keySpec{keyRange(keyRO|keyAccess, 1, 0, 1)}},
		&command{name: "ttl", arity: 2, flags: flagReadOnly | flagFast, run: cmdTTL, group: "generic", since: "0.1.0",
			summary: "Seconds until the key's state disappears, -2 if absent.", complexity: "O(1)",
			arguments: one, keySpecs: []keySpec{keyRange(keyRO|keyAccess, 1, 0, 1)}},
		&command{name: "scan", arity: -2, flags: flagReadOnly, run: cmdScan, group: "generic", since: "0.1.0",
			summary: "Iterates over the keys.", complexity: "O(1) per call, O(N) for a whole iteration",
			arguments: []argDoc{
				{name: "cursor", typ: "integer"},
				{name: "pattern", typ: "pattern", token: "MATCH", optional: true},
				{name: "count", typ: "integer", token: "COUNT", optional: true},
				{name: "type", typ: "string", token: "TYPE", optional: true},
			}},
		&command{name: "dbsize", arity: 1, flags: flagReadOnly, run: cmdDBSize, group: "server", since: "0.1.0",
			summary: "Counts the keys that hold state.", complexity: "O(N): expired entries not yet swept are not counted"},
		&command{name: "flushall", arity: -1, maxArgs: 2, flags: flagWrite, run: cmdFlush, group: "server", since: "0.1.0",
			categories: []string{"keyspace", "admin", "dangerous"},
			summary:    "Removes every key.", complexity: "O(N)", arguments: flushArgs},
		&command{name: "flushdb", arity: -1, maxArgs: 2, flags: flagWrite, run: cmdFlush, group: "server", since: "0.1.0",
			categories: []string{"keyspace", "admin", "dangerous"},
			summary:    "Removes every key (sluice has one database).", complexity: "O(N)", arguments: flushArgs},
	)
}

func cmdDel(s *session, args [][]byte) {
	n, err := s.h.ks.Delete(s.conn.Now(), args[1:])
	s.replyInt(n, err)
}

func cmdExists(s *session, args [][]byte) {
	n, err := s.h.ks.Exists(s.conn.Now(), args[1:])
	s.replyInt(n, err)
}

func cmdType(s *session, args [][]byte) {
	algo, err := s.h.ks.Type(s.conn.Now(), args[1])
	if err != nil {
		s.writeError(err)
		return
	}
	s.writeSimple(algo.String())
}

func cmdPTTL(s *session, args [][]byte) { s.replyTTL(args[1], 1) }

// cmdTTL rounds to the nearest second, as Redis does.
func cmdTTL(s *session, args [][]byte) { s.replyTTL(args[1], 1000) }

// replyTTL replies the time until key's state expires in units of unit ms
// (rounded to the nearest unit; milliseconds rounded up), or -2 if absent.
func (s *session) replyTTL(key []byte, unit int64) {
	ttl, err := s.h.ks.TTL(s.conn.Now(), key)
	if err != nil {
		s.writeError(err)
		return
	}
	s.writeTTL(ttl, unit)
}

// writeTTL writes the reply for ttl, as Keyspace.TTL returns it, in units
// of unit ms.
func (s *session) writeTTL(ttl, unit int64) {
	switch {
	case ttl < 0:
		s.writeInt(-2)
	case ttl == math.MaxInt64: // a string without a TTL
		s.writeInt(-1)
	default:
		s.writeInt((ceilMillis(ttl) + unit/2) / unit)
	}
}

// One SCAN call does a bounded amount of work, so that it holds its event
// loop for a few milliseconds at most whatever COUNT, the keys and the
// pattern: it visits at most scanMaxCount records, replies at most
// scanMaxBytes of keys (and at least one key), and spends at most
// glob.StepLimit steps matching. Like Redis's SCAN, it may then return fewer
// keys than COUNT, with a cursor to go on from. The store copies keys out of
// a shard under its lock a chunk at a time; matching runs with no lock held.
const (
	scanMaxCount = 4096
	scanMaxBytes = 1 << 20
)

// parseScanCount reads SCAN's COUNT (and RL.OVERRIDE LIST's): a positive
// integer, capped at scanMaxCount.
func parseScanCount(arg []byte) (int, error) {
	v, ok := parse.Int(arg)
	if !ok {
		return 0, errNotInteger
	}
	if v < 1 {
		return 0, errSyntax
	}
	return int(min(v, scanMaxCount)), nil
}

// cmdScan: SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
func cmdScan(s *session, args [][]byte) {
	// arguments
	cursor, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		s.writeError(errInvalidCursor)
		return
	}
	var pattern []byte
	count := 10
	typ := ""
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			s.writeError(errSyntax)
			return
		}
		switch {
		case equalFold(args[i], "match"):
			pattern = args[i+1]
			if len(pattern) == 1 && pattern[0] == '*' {
				pattern = nil
			}
		case equalFold(args[i], "count"):
			if count, err = parseScanCount(args[i+1]); err != nil {
				s.writeError(err)
				return
			}
		case equalFold(args[i], "type"):
			typ = string(args[i+1])
		default:
			s.writeError(errSyntax)
			return
		}
	}
	// operation
	var found []byte // the keys found, one after the other
	var ends []int   // where each ends in found
	steps, offered, tooComplex := glob.StepLimit, 0, false
	next, err := s.h.ks.Scan(s.conn.Now(), cursor, count, func(key []byte, algo algorithms.Algo) bool {
		if offered++; offered > 1 && (len(found)+len(key) > scanMaxBytes || steps <= 0) {
			return false // for the next call
		}
		if typ != "" && algo.String() != typ {
			return true
		}
		if pattern != nil {
			m, decided, used := glob.Match(pattern, key, false, glob.MaxStars, steps)
			if !decided {
				tooComplex = offered == 1 // else the next call has the whole budget for it
				return false
			}
			if steps -= used; !m {
				return true
			}
		}
		found = append(found, key...)
		ends = append(ends, len(found))
		return true
	})
	if err == nil && tooComplex {
		err = errPatternTooComplex
	}
	if err != nil {
		s.writeError(err)
		return
	}
	// reply
	s.writeArray(2)
	s.writeBulkString(strconv.FormatUint(next, 10))
	s.writeArray(len(ends))
	from := 0
	for _, end := range ends {
		s.writeBulk(found[from:end])
		from = end
	}
}

func cmdDBSize(s *session, args [][]byte) {
	n, err := s.h.ks.DBSize(s.conn.Now())
	s.replyInt(n, err)
}

// cmdFlush: FLUSHALL [ASYNC|SYNC], FLUSHDB [ASYNC|SYNC]. Both run at once.
func cmdFlush(s *session, args [][]byte) {
	if len(args) == 2 && !equalFold(args[1], "async") && !equalFold(args[1], "sync") {
		s.writeError(errSyntax)
		return
	}
	if err := s.h.ks.Flush(s.conn.Now()); err != nil {
		s.writeError(err)
		return
	}
	s.writeOK()
}

func (s *session) replyInt(n int64, err error) {
	if err != nil {
		s.writeError(err)
		return
	}
	s.writeInt(n)
}
