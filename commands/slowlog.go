package commands

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// SLOWLOG. sluice times batches, not single commands (cmdstats.go), so an
// entry is a batch that took at least slowlog-log-slower-than
// microseconds: its arguments are the names of the batch's commands,
// followed, for a batch of more than one command, by "(batch of N
// commands)". Client address and name are the connection's, as in Redis.
// Entries are kept in a ring of slowlog-max-len under a mutex taken only
// for slow batches.

// slowEntry is one SLOWLOG entry.
type slowEntry struct {
	id   int64
	at   int64 // unix seconds
	us   int64
	args []string
	addr string
	name string
}

type slowlog struct {
	slower atomic.Int64 // µs; negative: off
	maxLen atomic.Int64

	mu      sync.Mutex
	entries []slowEntry // newest last
	nextID  int64
}

// slow reports whether a batch of dur must be logged.
func (l *slowlog) slow(dur int64) bool {
	t := l.slower.Load()
	return t >= 0 && dur/1000 >= t
}

// add logs a slow batch of session s.
func (l *slowlog) add(s *session, dur, calls int64) {
	var args []string
	for i := 0; i < s.nslots; i++ {
		args = append(args, strings.ToUpper(s.slots[i].cmd.name))
	}
	if calls > 1 {
		args = append(args, "(batch of "+strconv.FormatInt(calls, 10)+" commands)")
	}
	s.mu.Lock()
	name := s.name
	s.mu.Unlock()
	e := slowEntry{at: time.Now().Unix(), us: dur / 1000, args: args, addr: s.conn.RemoteAddr(), name: name}
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID
	l.nextID++
	l.entries = append(l.entries, e)
	if over := len(l.entries) - int(l.maxLen.Load()); over > 0 {
		l.entries = append(l.entries[:0], l.entries[over:]...)
	}
}

func init() {
	register(&command{name: "slowlog", arity: -2, flags: flagAdmin | flagLoading, run: cmdSlowlog, group: "server",
		since: "0.2.0", summary: "SLOWLOG GET [count] | LEN | RESET | HELP: the batches that took longer than slowlog-log-slower-than.",
		complexity: "O(N) where N is the number of entries returned", subs: []string{"get", "len", "reset", "help"}})
}

var slowlogHelp = []string{
	"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"GET [<count>]",
	"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
	"    Entries are made of:",
	"    id, timestamp, time in microseconds, arguments array, client IP and port,",
	"    client name",
	"LEN",
	"    Return the length of the slowlog.",
	"RESET",
	"    Reset the slowlog.",
	"HELP",
	"    Prints this help.",
}

// cmdSlowlog: SLOWLOG GET [count] | LEN | RESET | HELP
func cmdSlowlog(s *session, args [][]byte) {
	l := &s.h.slowlog
	sub, n := args[1], len(args)
	switch {
	case equalFold(sub, "get") && n <= 3:
		count := int64(10)
		if n == 3 {
			v, err := strconv.ParseInt(string(args[2]), 10, 64)
			if err != nil || v < -1 {
				s.writeError(errSlowlogCount)
				return
			}
			count = v
		}
		l.mu.Lock()
		var out []slowEntry
		for i := len(l.entries) - 1; i >= 0 && (count < 0 || int64(len(out)) < count); i-- {
			out = append(out, l.entries[i])
		}
		l.mu.Unlock()
		s.writeArray(len(out))
		for _, e := range out {
			s.writeArray(6)
			s.writeInt(e.id)
			s.writeInt(e.at)
			s.writeInt(e.us)
			s.writeArray(len(e.args))
			for _, a := range e.args {
				s.writeBulkString(a)
			}
			s.writeBulkString(e.addr)
			s.writeBulkString(e.name)
		}
	case equalFold(sub, "len") && n == 2:
		l.mu.Lock()
		k := len(l.entries)
		l.mu.Unlock()
		s.writeInt(int64(k))
	case equalFold(sub, "reset") && n == 2:
		l.mu.Lock()
		l.entries = nil
		l.mu.Unlock()
		s.writeOK()
	case equalFold(sub, "help") && n == 2:
		s.writeArray(len(slowlogHelp))
		for _, h := range slowlogHelp {
			s.writeSimple(h)
		}
	case equalFold(sub, "get"), equalFold(sub, "len"), equalFold(sub, "reset"), equalFold(sub, "help"):
		s.writeError(errWrongArgs("slowlog|" + strings.ToLower(string(sub))))
	default:
		s.writeError(errUnknownSubcommand(sub, "SLOWLOG"))
	}
}
