package commands

import (
	"sync"
	"sync/atomic"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/topk"
)

// Who is being throttled (RL.TOP, the metrics' top keys): every decision's
// key is counted in space-saving sketches (package topk), one set for all
// decisions and one for denials, in constant memory whatever the number of
// keys.
//
// The sketches are striped like the per-command figures: one stripe per
// event loop (clients with goroutines of their own share stripes by
// connection id), each with a mutex that a batch's decisions take once
// together, never once per decision; a stripe's sketches are made at its
// first decision. Only the minute in progress is counted on the decision
// path; when the minute ends, its sketches are merged into the
// five-minute and one-hour periods in progress (once a minute per stripe).
// A period keeps the sketches of the one before it, so a window of w
// reports the w-aligned period in progress and the whole one before it:
// between w and 2w of decisions. Readers sum the stripes (topk.Tally),
// with the error bound of every count.
//
// A clock that steps back (DEBUG CLOCK SET) leaves the periods as they
// are: its decisions count in the minute in progress.

const (
	topStripes  = 8
	topDecision = 0 // a period's sketches: every decision
	topDenied   = 1 // the decisions denied
)

// The windows RL.TOP and the metrics read, and their periods in ns.
var topWindows = [...]struct {
	name string
	ns   int64
}{{"1m", 60e9}, {"5m", 300e9}, {"1h", 3600e9}}

// topPeriod is one window's sketches: of the period in progress (epoch,
// counted in periods since the Unix epoch) and of the one before.
type topPeriod struct {
	epoch     int64
	cur, prev [2]*topk.Sketch
}

// advance makes e the period in progress: the one in progress becomes
// the previous one if e follows it, and both are emptied if e is further.
// A period before the one in progress changes nothing.
func (p *topPeriod) advance(e int64) {
	switch {
	case e <= p.epoch:
		return
	case e == p.epoch+1:
		p.cur, p.prev = p.prev, p.cur
		p.cur[0].Reset()
		p.cur[1].Reset()
	default:
		for k := range 2 {
			p.cur[k].Reset()
			p.prev[k].Reset()
		}
	}
	p.epoch = e
}

// topStripe is one lane's sketches, guarded by mu.
type topStripe struct {
	_       [64]byte
	mu      sync.Mutex
	periods *[len(topWindows)]topPeriod // nil until the stripe's first decision
	_       [64]byte
}

// topKeys are a Handler's heavy-hitter sketches; k counters each (0: off).
type topKeys struct {
	k       int
	stripes [topStripes]topStripe
	bytes   atomic.Int64 // the sketches made, for MEMORY STATS
}

// periodsOf returns the stripe's periods, making them at the first use.
// Requires st.mu.
func (t *topKeys) periodsOf(st *topStripe) *[len(topWindows)]topPeriod {
	if st.periods == nil {
		ps := new([len(topWindows)]topPeriod)
		for w := range ps {
			for k := range 2 {
				ps[w].cur[k], ps[w].prev[k] = topk.New(t.k), topk.New(t.k)
			}
		}
		st.periods = ps
		t.bytes.Add(int64(len(topWindows)) * 4 * topk.Size(t.k))
	}
	return st.periods
}

// rotate brings the stripe's periods to instant now (unix ns): a minute
// that ended is merged into the longer periods it belongs to. Requires
// st.mu and the periods made.
func rotate(ps *[len(topWindows)]topPeriod, now int64) {
	m := now / topWindows[0].ns
	live := &ps[0]
	if m <= live.epoch {
		return
	}
	if live.cur[topDecision].Total() > 0 {
		at := live.epoch * topWindows[0].ns // the minute's start
		for w := 1; w < len(topWindows); w++ {
			ps[w].advance(at / topWindows[w].ns)
			if at/topWindows[w].ns == ps[w].epoch { // not a minute of a period left behind
				for k := range 2 {
					topk.Merge(ps[w].cur[k], live.cur[k])
				}
			}
		}
	}
	live.advance(m)
	for w := 1; w < len(topWindows); w++ {
		ps[w].advance(now / topWindows[w].ns)
	}
}

// record counts the keys of a batch's decisions (those that took or
// refunded nothing are left out: peeks and releases) at instant now, in
// the sketches of the session's stripe: one lock for the whole batch.
func (t *topKeys) record(s *session, now int64, reqs []algorithms.Request, out []algorithms.Outcome) {
	if t.k == 0 || len(reqs) == 0 {
		return
	}
	lane := s.conn.Lane()
	if lane < 0 {
		lane = int(s.conn.ID())
	}
	st := &t.stripes[lane%topStripes]
	st.mu.Lock()
	ps := t.periodsOf(st)
	rotate(ps, now)
	live := &ps[0].cur
	for i := range reqs {
		r := &reqs[i]
		if r.N <= 0 || out[i].Err != nil {
			continue
		}
		h := topk.Hash(r.Key)
		live[topDecision].Add(r.Key, h, 1)
		if !out[i].Result.Allowed {
			live[topDenied].Add(r.Key, h, 1)
		}
	}
	st.mu.Unlock()
}

// top returns the tally of the sketches of list (denied: the decisions
// denied; else every decision) over window w (an index in topWindows) at
// instant now: every stripe's keys with their counts and error bounds.
// Any goroutine; it takes each stripe's lock in turn.
func (t *topKeys) top(denied bool, w int, now int64) *topk.Tally {
	kind := topDecision
	if denied {
		kind = topDenied
	}
	tl := &topk.Tally{}
	for i := range t.stripes {
		st := &t.stripes[i]
		st.mu.Lock()
		if ps := st.periods; ps != nil {
			rotate(ps, now)
			tl.Add(ps[w].cur[kind])
			tl.Add(ps[w].prev[kind])
			if w > 0 {
				tl.Add(ps[0].cur[kind]) // the minute in progress, not merged yet
			}
		}
		st.mu.Unlock()
	}
	return tl
}
