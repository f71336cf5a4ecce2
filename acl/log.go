package acl

import "sync"

// The ACL LOG: denials and failed authentications, newest first, with
// repeats counted on one entry as Redis does (ACL_LOG_GROUPING_MAX_TIME_DELTA,
// addACLLogEntry). The log reads no clock: callers pass the instant.

// Context says where a denied command ran, as ACL LOG prints it.
type Context uint8

const (
	Toplevel Context = iota
	Multi            // queued in MULTI, or run by EXEC
	Lua
	Module
)

func (c Context) String() string {
	switch c {
	case Toplevel:
		return "toplevel"
	case Multi:
		return "multi"
	case Lua:
		return "lua"
	case Module:
		return "module"
	}
	return "unknown"
}

// LogEntry is one ACL LOG entry.
type LogEntry struct {
	Count      int64
	Reason     Reason
	Context    Context
	Object     string // the command, the key, or for auth the command that tried ("auth", "hello")
	Username   string
	Time       int64  // unix ms of the last occurrence
	ClientInfo string // CLIENT INFO's line for the last client
}

// AgeSeconds is ACL LOG's age-seconds: how long ago the last occurrence
// was at nowMs.
func (e *LogEntry) AgeSeconds(nowMs int64) float64 { return float64(nowMs-e.Time) / 1000 }

const (
	// groupWindow is how close in time a repeat must be to count on an
	// entry, and groupScan how many of the newest entries are searched.
	groupWindow = 60000
	groupScan   = 10
	// DefaultLogMax is Redis's acllog-max-len.
	DefaultLogMax = 128
	// Objects and client lines are cut to these lengths, so that the log's
	// memory stays bounded whatever keys clients send.
	maxObject     = 512
	maxClientInfo = 1024
)

// Log is a bounded ACL LOG.
//
// Concurrency: its methods are safe for concurrent use.
type Log struct {
	mu      sync.Mutex
	max     int
	entries []LogEntry // newest first
}

// NewLog returns a log that keeps at most n entries (at least 1).
func NewLog(n int) *Log { return &Log{max: max(n, 1)} }

// SetMax changes the bound, dropping the oldest entries beyond it.
func (l *Log) SetMax(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.max = max(n, 1)
	l.trim()
}

func (l *Log) trim() {
	if len(l.entries) > l.max {
		clear(l.entries[l.max:])
		l.entries = l.entries[:l.max]
	}
}

// Add records e at e.Time: if one of the 10 newest entries has the same
// reason, context, object and user and is within 60 s of it, that entry's
// count goes up, it takes e's time and client line and moves to the front;
// otherwise e is added at the front (with Count 1) and the oldest entry
// beyond the bound is dropped.
func (l *Log) Add(e LogEntry) {
	e.Object = cut(e.Object, maxObject)
	e.ClientInfo = cut(e.ClientInfo, maxClientInfo)
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := 0; i < len(l.entries) && i < groupScan; i++ {
		m := &l.entries[i]
		d := m.Time - e.Time
		if d < 0 {
			d = -d
		}
		if m.Reason == e.Reason && m.Context == e.Context && d <= groupWindow && m.Object == e.Object && m.Username == e.Username {
			hit := *m
			hit.Count++
			hit.Time, hit.ClientInfo = e.Time, e.ClientInfo
			copy(l.entries[1:i+1], l.entries[:i])
			l.entries[0] = hit
			return
		}
	}
	e.Count = 1
	l.entries = append(l.entries, LogEntry{})
	copy(l.entries[1:], l.entries)
	l.entries[0] = e
	l.trim()
}

// Entries returns the newest count entries (ACL LOG [count]; a negative
// count is 0).
func (l *Log) Entries(count int) []LogEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	count = min(max(count, 0), len(l.entries))
	return append([]LogEntry(nil), l.entries[:count]...)
}

// Reset empties the log (ACL LOG RESET).
func (l *Log) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = nil
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
