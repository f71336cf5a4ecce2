package lease

import (
	"math"
	"strconv"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/internal/resp"
)

// The decision path. A leased request spends tokens of its key's stock;
// when the stock falls below half a batch a background take refills it
// (one in flight per key), and when the stock cannot pay for a request the
// request takes what it lacks from the upstream on its own path. Every
// admitted unit was debited from the upstream's bucket first, so the
// tier never admits more than the upstream would (docs/leases.md has the
// bounds).

// Decide carries out reqs at now: leased ones from stock, the others
// forwarded to the upstream in one pipeline. Requests on different paths
// are independent of each other's order.
func (t *Tier) Decide(now int64, reqs []algorithms.Request, out []algorithms.Outcome) {
	var fwd []int
	for i := range reqs {
		if t.leased(&reqs[i]) && t.decideLeased(now, &reqs[i], &out[i]) {
			continue
		}
		fwd = append(fwd, i)
	}
	if len(fwd) > 0 {
		t.forward(now, reqs, fwd, out)
	}
}

// decideLeased decides r from its key's stock; false if r is to be
// forwarded instead (an RL.CHECK whose subject has an override upstream).
func (t *Tier) decideLeased(now int64, r *algorithms.Request, o *algorithms.Outcome) bool {
	for {
		s := t.stockFor(r.Key, r.Limit, r.Override)
		s.mu.Lock()
		if s.gone { // ended between the lookup and the lock
			s.mu.Unlock()
			continue
		}
		ok := t.spend(now, s, r, o)
		s.mu.Unlock()
		return ok
	}
}

// spend decides r on s at now, or reports false if s's subject has an
// override upstream: r is forwarded, and s left unused, so that its lease
// ends after the TTL and the next take looks again. It requires that s.mu
// is held.
func (t *Tier) spend(now int64, s *stock, r *algorithms.Request, o *algorithms.Outcome) bool {
	if s.overridden {
		return false
	}
	*o = algorithms.Outcome{}
	s.lastUse = now
	s.noteRate(now, r.N)
	if now >= s.until { // a fixed window's units lapse at its end
		t.st.lapsedUnits.Add(s.have)
		s.have, s.until = 0, math.MaxInt64
	}
	if s.have < r.N && s.batch == 0 && !t.down(now) {
		// The key's first take: no stock yet, so the request waits for it.
		// Later requests never wait for the upstream: one the stock cannot
		// pay is denied at once and a background refill asks for what it
		// lacked (the answer arrives one round trip later).
		t.st.syncTakes.Add(1)
		t.take(now, s, r.N-s.have, o) // on the request's path, s.mu held: the key waits for it
		if s.overridden {
			*o = algorithms.Outcome{}
			return false
		}
	}
	if s.have < r.N {
		s.short = max(s.short, r.N-s.have)
	}
	switch {
	case s.have >= r.N:
		s.have -= r.N
		t.st.localDecisions.Add(1)
		*o = algorithms.Outcome{Result: s.result(true)}
	case o.Err != nil:
		return true // the upstream refused the take (WRONGTYPE …)
	case t.down(now):
		t.fallback(now, s, r, o)
		return true
	case s.batch > 0 && o.Result.Limit == 0:
		*o = algorithms.Outcome{Result: s.result(false)} // denied from stock; a refill follows
	case o.Result.Limit == 0:
		*o = algorithms.Outcome{Result: s.result(false)}
		o.Result.RetryAfter = int64(retryDown)
	default:
		// the upstream's denial (or error) that take left in o
		o.Result.Remaining, o.Result.Granted = s.have, 0
	}
	if (s.have < s.lowWater() || s.short > 0) && !s.refilling && !t.down(now) {
		s.refilling = true
		go t.refill(s)
	}
	return true
}

// result is a decision served from stock: Remaining is the local stock,
// ResetAfter the time the upstream's bucket needs to refill what this
// holder does not hold, as far as the holder knows.
func (s *stock) result(allowed bool) algorithms.Result {
	r := algorithms.Result{Allowed: allowed, Limit: s.limit.Count, Remaining: s.have}
	if !allowed {
		r.RetryAfter = s.limit.Period
	}
	if s.limit.Algo == algorithms.Token {
		r.ResetAfter = max(s.limit.Count-s.have, 0) * s.limit.Period
	}
	return r
}

// noteRate counts n units at now into the rate estimate: samples of at
// least 100 ms, smoothed by halves.
func (s *stock) noteRate(now, n int64) {
	const sample = int64(100e6)
	if s.rateStart == 0 {
		s.rateStart = now
	}
	s.rateCount += n
	if el := now - s.rateStart; el >= sample {
		inst := float64(s.rateCount) * 1e9 / float64(el)
		if el >= 10*sample || s.rate == 0 {
			s.rate = inst
		} else {
			s.rate = (s.rate + inst) / 2
		}
		s.rateStart, s.rateCount = now, 0
	}
}

// batchSize is the batch L to ask for: the recent rate × BatchTime, at
// least need, at most MaxBatch and the limit's capacity.
func (t *Tier) batchSize(s *stock, need int64) int64 {
	l := int64(math.Ceil(s.rate * t.cfg.BatchTime.Seconds()))
	l = min(max(l, need, 1), t.cfg.MaxBatch, s.limit.Count)
	return max(l, need)
}

// lowWater is the stock under which a background refill starts: half the
// last batch, and at least 1 (refill when empty).
func (s *stock) lowWater() int64 { return max((s.batch+1)/2, 1) }

// take asks the upstream for [need, L] units of s's limit and adds what it
// grants to s; on a denial or an error it leaves the outcome in o. It
// requires that s.mu is held (the background refill takes it around the
// call instead: see refill).
func (t *Tier) take(now int64, s *stock, need int64, o *algorithms.Outcome) {
	l := t.batchSize(s, need)
	s.batch = l
	g, res, ovr, err := t.takeUpstream(s.key, s.limit, need, l, s.ovr)
	if err != nil {
		t.failed(err)
		if _, ok := err.(errReply); ok {
			*o = algorithms.Outcome{Err: err}
		}
		return
	}
	if ovr {
		t.overridden(s, g)
		return
	}
	if g == 0 {
		*o = algorithms.Outcome{Result: res}
		return
	}
	s.add(now, g, res)
	t.st.refills.Add(1)
	t.st.refillUnits.Add(g)
	t.st.lastBatch.Store(l)
}

// add puts g granted units into s. A fixed window's units are good until
// the end of the window they were counted in: the reply's reset after,
// in whole milliseconds rounded up, counted from sent (before the
// upstream decided) less one millisecond, so never after the upstream's
// own window end. Units left from another window lapse.
func (s *stock) add(sent, g int64, res algorithms.Result) {
	if s.limit.Algo == algorithms.Fixed {
		until := sent + max(res.ResetAfter-1e6, 0)
		if s.have > 0 && (until-s.until > s.limit.Period/2 || s.until-until > s.limit.Period/2) {
			s.have = 0 // another window's: they lapse (counted by the caller's spend at until)
		}
		if s.have == 0 || until < s.until {
			s.until = until
		}
	}
	s.have += g
}

// refill is the background take of a stock below its low-water mark.
func (t *Tier) refill(s *stock) {
	s.mu.Lock()
	need, key, limit := max(s.short, 1), s.key, s.limit
	s.short = 0
	l := t.batchSize(s, need)
	s.batch = l
	s.mu.Unlock()
	sent := now()
	g, res, ovr, err := t.takeUpstream(key, limit, need, l, s.ovr)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refilling = false
	if err != nil {
		t.failed(err)
		return
	}
	if ovr {
		t.overridden(s, g)
		return
	}
	if g == 0 {
		return
	}
	t.st.refills.Add(1)
	t.st.refillUnits.Add(g)
	t.st.lastBatch.Store(l)
	if s.gone { // its lease ended meanwhile: give these back at once
		if limit.Algo == algorithms.Token {
			go t.giveBack(s, g)
		} else {
			t.st.lapsedUnits.Add(g)
		}
		return
	}
	s.add(sent, g, res)
}

// overridden marks s as a subject with an override upstream: the g units
// just taken go back (a bucket's) or lapse, and its requests are forwarded
// as RL.CHECK from now on. It requires that s.mu is held.
func (t *Tier) overridden(s *stock, g int64) {
	s.overridden = true
	t.st.refills.Add(1)
	t.st.refillUnits.Add(g)
	t.st.lapsedUnits.Add(s.have)
	s.have = 0
	if g <= 0 {
		return
	}
	if s.limit.Algo == algorithms.Token {
		go t.giveBack(s, g)
	} else {
		t.st.lapsedUnits.Add(g)
	}
}

// takeUpstream sends RL.TAKE key ALGO p1 p2 l MIN need and returns the
// units granted and the decision. With ovr (an RL.CHECK's subject's
// override key) it sends EXISTS ovr first, in the same pipeline, and
// reports whether the override exists: the units were taken all the same.
func (t *Tier) takeUpstream(key []byte, limit algorithms.Limit, need, l int64, ovr []byte) (int64, algorithms.Result, bool, error) {
	cmd := [][]byte{[]byte("RL.TAKE"), key, nil, nil, nil, []byte(strconv.FormatInt(l, 10)),
		[]byte("MIN"), []byte(strconv.FormatInt(need, 10))}
	count := []byte(strconv.FormatInt(limit.Count, 10))
	if limit.Algo == algorithms.Token {
		cmd[2], cmd[3], cmd[4] = []byte("TOKEN"), rateArg(limit.Period), count
	} else {
		cmd[2], cmd[3], cmd[4] = []byte("FIXED"), count, durationArg(limit.Period)
	}
	cmds := [][][]byte{cmd}
	if ovr != nil {
		cmds = [][][]byte{{[]byte("EXISTS"), ovr}, cmd}
	}
	var d [6]int64
	exists := false
	err := t.up.do(cmds, func(i int, v *resp.Value) error {
		if i == len(cmds)-1 {
			return ints(v, d[:])
		}
		if v.IsError() {
			return errReply(v.Text)
		}
		exists = v.Num > 0
		return nil
	})
	if err != nil {
		return 0, algorithms.Result{}, false, err
	}
	return d[5], decision(d[:5]), exists, nil
}

// decision converts the five integers of a decision reply to a Result.
func decision(d []int64) algorithms.Result {
	r := algorithms.Result{Allowed: d[0] == 1, Limit: d[1], Remaining: d[2], RetryAfter: d[3], ResetAfter: d[4] * 1e6}
	if r.RetryAfter > 0 {
		r.RetryAfter *= 1e6
	}
	return r
}

// fallback decides r while the upstream is unreachable and the stock
// cannot pay: denied (FallbackClosed), or against Share of the limit kept
// here (FallbackLocalShare). It requires that s.mu is held.
func (t *Tier) fallback(now int64, s *stock, r *algorithms.Request, o *algorithms.Outcome) {
	t.st.fallbackDecisions.Add(1)
	if t.cfg.Fallback == FallbackClosed {
		*o = algorithms.Outcome{Result: s.result(false)}
		o.Result.RetryAfter = max(t.downUntil.Load()-now, 0)
		return
	}
	share := t.cfg.Share
	count := max(int64(float64(s.limit.Count)*share), 1)
	var res algorithms.Result
	if s.limit.Algo == algorithms.Token {
		b := algorithms.TokenBucket{Capacity: count, Interval: int64(math.Ceil(float64(s.limit.Period) / share))}
		var next algorithms.TokenState
		if res, next = b.Take(s.local, now, r.N); res.Allowed {
			s.local = next
		}
	} else {
		w := algorithms.FixedWindow{Limit: count, Window: s.limit.Period}
		var next algorithms.FixedState
		if res, next = w.Take(s.localF, now, r.N); res.Allowed {
			s.localF = next
		}
	}
	*o = algorithms.Outcome{Result: res}
}
