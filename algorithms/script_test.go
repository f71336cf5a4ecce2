package algorithms

import (
	"slices"
	"testing"
	"time"
)

// A limiter under test: the algorithm with its state, kept the way a
// keyspace keeps it (the new state is stored only when the request was
// admitted and n ≠ 0).
type limiter interface {
	take(now, n int64) Result
	// absent reports whether the stored state is equal to no state at now.
	absent(now int64) bool
}

// step is one line of a script: at t0+at, ask for n; want this result.
type step struct {
	at   time.Duration
	n    int64
	want Result
}

// runScript, the package's one script runner, plays steps against l and
// checks every reply; a token bucket's peeks must also hand back the state
// as it stands.
func runScript(t *testing.T, l limiter, steps []step) {
	t.Helper()
	for i, st := range steps {
		now := t0 + int64(st.at)
		got := l.take(now, st.n)
		if got != st.want {
			t.Fatalf("step %d: take(t0+%v, n=%d) = %s; want %s", i, st.at, st.n, fmtResult(got), fmtResult(st.want))
		}
		if tl, ok := l.(*tokenLimiter); ok && tl.peekMoved {
			t.Fatalf("step %d: a peek (n=0) handed back a changed state", i)
		}
	}
}

type tokenLimiter struct {
	b         TokenBucket
	s         TokenState
	peekMoved bool // a peek's state was not the stored one at the same instant
}

func (l *tokenLimiter) take(now, n int64) Result {
	r, s := l.b.Take(l.s, now, n)
	if n == 0 && s != usedState(l.s, now, l.b) {
		l.peekMoved = true
	}
	if r.Allowed && n != 0 {
		l.s = s
	}
	return r
}
func (l *tokenLimiter) absent(now int64) bool { return l.s.TAT <= now }

type leakyLimiter struct {
	b LeakyBucket
	s LeakyState
}

func (l *leakyLimiter) take(now, n int64) Result {
	r, s := l.b.Take(l.s, now, n)
	if r.Allowed && n != 0 {
		l.s = s
	}
	return r
}
func (l *leakyLimiter) absent(now int64) bool { return l.s.TAT <= now }

type throttleLimiter struct {
	c CellThrottle
	s TokenState
}

func (l *throttleLimiter) take(now, n int64) Result {
	r, s := l.c.Take(l.s, now, n)
	if r.Allowed && n != 0 {
		l.s = s
	}
	return r
}
func (l *throttleLimiter) absent(now int64) bool { return l.s.TAT <= now }

type fixedLimiter struct {
	w FixedWindow
	s FixedState
}

func (l *fixedLimiter) take(now, n int64) Result {
	r, s := l.w.Take(l.s, now, n)
	if r.Allowed && n != 0 {
		l.s = s
	}
	return r
}
func (l *fixedLimiter) absent(now int64) bool {
	return l.s.Count == 0 || l.s.Start+l.w.Window <= now
}

type slidingLimiter struct {
	w SlidingWindow
	s SlidingState
}

func (l *slidingLimiter) take(now, n int64) Result {
	r, s := l.w.Take(l.s, now, n)
	if r.Allowed && n != 0 {
		l.s = s
	}
	return r
}
func (l *slidingLimiter) absent(now int64) bool {
	_, s := l.w.Take(l.s, now, 0)
	return s.Current == 0 && s.Previous == 0
}

type logLimiter struct {
	l SlidingLog
	s LogState
}

func (l *logLimiter) take(now, n int64) Result {
	if n == 0 || !l.l.Check(l.s, now, n).Allowed {
		before := l.s.Entries(nil)
		r, s := l.l.Take(l.s, now, n)
		if !slices.Equal(s.Entries(nil), before) || !slices.Equal(l.s.Entries(nil), before) {
			panic("a peek or a denial changed a log")
		}
		return r
	}
	r, s := l.l.Take(l.s, now, n)
	l.s = s
	return r
}
func (l *logLimiter) absent(now int64) bool {
	return l.l.Check(l.s, now, 0).Remaining == l.l.Limit && l.l.Check(l.s, now, 0).ResetAfter == 0
}

// expiresWithReset checks, after each random step, that the state is absent
// exactly from now + ResetAfter on: not absent one nanosecond before (unless
// ResetAfter is 0), absent at that instant.
func expiresWithReset(t *testing.T, l limiter, r Result, now int64, what string) {
	t.Helper()
	if r.ResetAfter < 0 {
		t.Fatalf("%s: negative reset %d", what, r.ResetAfter)
	}
	if !l.absent(now + r.ResetAfter) {
		t.Fatalf("%s: state not absent at now+reset (%v)", what, time.Duration(r.ResetAfter))
	}
	if r.ResetAfter > 0 && l.absent(now+r.ResetAfter-1) {
		t.Fatalf("%s: state already absent 1ns before now+reset (%v)", what, time.Duration(r.ResetAfter))
	}
}
