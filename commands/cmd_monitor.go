package commands

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// MONITOR: every command the server runs, as Redis prints it
// (+<unix seconds>.<µs> [0 <client addr>] "cmd" "arg" …), streamed to the
// connections that asked. The feed costs the other connections one atomic
// load per command while no one monitors. A monitor's stream waits in a
// buffer of at most MonitorBufferLimit bytes (server.Conn.Push): a monitor
// that does not read is closed when it fills, and the server never waits
// for it. Arguments of AUTH, HELLO, ACL SETUSER and CONFIG SET are
// redacted, as Redis hides passwords, and so is the submission of
// RAFT.FORWARD, which carries the ACL changes a follower forwards.

// MonitorBufferLimit bounds what waits for one monitor.
const MonitorBufferLimit = 4 << 20

func init() {
	register(&command{name: "monitor", arity: 1, flags: flagAdmin | flagLoading, run: cmdMonitor, group: "server",
		since: "0.2.0", summary: "Streams every command the server runs to this connection.", complexity: "O(1)"})
}

// monitors are the connections that ran MONITOR, guarded by mu; n is
// their number, read without the lock on every command.
type monitors struct {
	mu   sync.RWMutex
	list []*session
	n    atomic.Int32
}

func cmdMonitor(s *session, args [][]byte) {
	m := &s.h.mon
	m.mu.Lock()
	if !s.monitoring {
		s.monitoring = true
		m.list = append(m.list, s)
		m.n.Store(int32(len(m.list)))
	}
	m.mu.Unlock()
	s.writeOK()
}

// stopMonitoring removes s from the monitors (its connection closed).
func (h *Handler) stopMonitoring(s *session) {
	m := &h.mon
	m.mu.Lock()
	for i, o := range m.list {
		if o == s {
			m.list = append(m.list[:i], m.list[i+1:]...)
			break
		}
	}
	m.n.Store(int32(len(m.list)))
	m.mu.Unlock()
}

// feedMonitors sends the command s is about to run to every monitor but
// s. It allocates the line: it runs only while someone monitors.
func (h *Handler) feedMonitors(s *session, cmd *command, args [][]byte) {
	now := time.Now()
	line := make([]byte, 0, 64)
	line = append(line, '+')
	line = strconv.AppendInt(line, now.Unix(), 10)
	line = append(line, '.')
	us := now.Nanosecond() / 1000
	for d := 100000; d > 1 && us < d; d /= 10 {
		line = append(line, '0')
	}
	line = strconv.AppendInt(line, int64(us), 10)
	line = append(line, " [0 "...)
	line = append(line, s.conn.RemoteAddr()...)
	line = append(line, ']')
	redact := redactFrom(cmd, args)
	for i, a := range args {
		line = append(line, ' ')
		if i >= redact {
			line = append(line, `"(redacted)"`...)
			continue
		}
		line = appendRepr(line, a)
	}
	line = append(line, '\r', '\n')
	m := &h.mon
	m.mu.RLock()
	for _, o := range m.list {
		if o != s {
			o.conn.Push(line, MonitorBufferLimit)
		}
	}
	m.mu.RUnlock()
}

// redactFrom returns the index of the first argument MONITOR hides.
func redactFrom(cmd *command, args [][]byte) int {
	switch cmd.name {
	case "auth", "hello", "migrate":
		return 1
	case "raft.forward":
		// a follower's encoded submission: its ACL SETUSER, DELUSER and
		// LOAD changes carry passwords and hashes, so all of it is hidden
		return 1
	case "acl":
		if len(args) > 1 && equalFold(args[1], "setuser") {
			return 3
		}
	case "config":
		if len(args) > 1 && equalFold(args[1], "set") {
			return 3
		}
	}
	return len(args)
}

// appendRepr appends a as Redis's sdscatrepr writes it: quoted, with \\,
// \", \n, \r, \t, \a, \b escaped and other bytes outside printable ASCII
// as \xhh.
func appendRepr(dst, a []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, c := range a {
		switch c {
		case '\\', '"':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\a':
			dst = append(dst, '\\', 'a')
		case '\b':
			dst = append(dst, '\\', 'b')
		default:
			if c < 0x20 || c > 0x7e {
				dst = append(dst, '\\', 'x', hex[c>>4], hex[c&15])
			} else {
				dst = append(dst, c)
			}
		}
	}
	return append(dst, '"')
}
