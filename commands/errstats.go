package commands

import (
	"sort"
	"sync"
	"sync/atomic"
)

// Error replies by code (INFO errorstats): the first word of the reply
// ("ERR", "WRONGTYPE", "NOAUTH" …). As in Redis, at most maxErrorCodes
// codes are tracked; replies with other codes are counted in the totals
// only. Error replies are not the hot path: a read lock finds a code's
// counter, and the lock is taken for writing only the first time a code
// is seen.

const maxErrorCodes = 128

type errStats struct {
	mu    sync.RWMutex
	codes map[string]*atomic.Int64
}

// count counts one error reply, line being the reply as written ("-CODE
// text\r\n").
func (e *errStats) count(line []byte) {
	code := line[1:]
	for i, c := range code {
		if c == ' ' || c == '\r' {
			code = code[:i]
			break
		}
	}
	e.mu.RLock()
	n := e.codes[string(code)]
	e.mu.RUnlock()
	if n == nil {
		e.mu.Lock()
		if e.codes == nil {
			e.codes = map[string]*atomic.Int64{}
		}
		if n = e.codes[string(code)]; n == nil && len(e.codes) < maxErrorCodes {
			n = new(atomic.Int64)
			e.codes[string(code)] = n
		}
		e.mu.Unlock()
		if n == nil {
			return
		}
	}
	n.Add(1)
}

// ErrorStat is the number of error replies with one code.
type ErrorStat struct {
	Code  string
	Count int64
}

// ErrorStats returns the error replies by code, in the order of codes.
func (h *Handler) ErrorStats() []ErrorStat {
	e := &h.errs
	e.mu.RLock()
	out := make([]ErrorStat, 0, len(e.codes))
	for code, n := range e.codes {
		out = append(out, ErrorStat{code, n.Load()})
	}
	e.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}

// reset forgets every code (CONFIG RESETSTAT).
func (e *errStats) reset() {
	e.mu.Lock()
	e.codes = nil
	e.mu.Unlock()
}
