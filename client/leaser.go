package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Leaser decides token buckets and fixed windows in-process from stock taken ahead from the
// server (RL.TAKE), the server-side lease tier's algorithm (docs/leases.md) inside the
// application: a hot key's decisions make no network round trip. Every admitted unit was debited
// from the server's limit first, so a Leaser never admits more than the server would; what it
// holds unspent is at most about two batches per key.
//
// A Leaser is safe for concurrent use. Its zero value is not usable: build it with NewLeaser, and
// Close it to give its stock back. Its only clock reads are in Allow and in its background work.
type Leaser struct {
	c   *Client
	opt LeaserOptions

	mu     sync.RWMutex
	stocks map[Limit]*stock
	closed bool

	wg   sync.WaitGroup // background refills, returns and the sweeper
	stop chan struct{}

	downUntil atomic.Int64 // Unix ns until which the server is deemed unreachable

	// what was taken, given back and admitted, for tests and the accounting
	// taken − returned − lapsed ≥ admitted.
	taken, returned, admitted atomic.Int64
}

// Fallback is what a Leaser does when a key's stock is spent and the server is unreachable.
type Fallback uint8

const (
	// FallbackClosed denies: no over-admission ever, at the cost of availability.
	FallbackClosed Fallback = iota
	// FallbackLocalShare decides against LeaserOptions.Share of the limit, kept in-process: each
	// cut-off Leaser may admit up to Share × (capacity + rate × outage) beyond its stock.
	FallbackLocalShare
)

// LeaserOptions configure a Leaser; zero fields take their defaults.
type LeaserOptions struct {
	// BatchTime is how much of a key's recent rate one take asks for (default 100ms); a batch
	// is at most the limit's capacity and MaxBatch (default 10 000).
	BatchTime time.Duration
	MaxBatch  int64
	// TTL is how long a key may go unused before its unspent stock is given back (default 1s).
	TTL time.Duration
	// Fallback and Share say what happens once the stock is spent and the server is
	// unreachable; Share defaults to 0.25. DownFor is how long a failed take marks the server
	// unreachable before the next take tries it (default 200ms).
	Fallback Fallback
	Share    float64
	DownFor  time.Duration
}

// ErrLeaserClosed is Allow's error after Close.
var ErrLeaserClosed = errors.New("sluice: leaser closed")

// stock is one limit's units held in-process.
type stock struct {
	mu        sync.Mutex
	lim       Limit
	have      int64
	until     time.Time // a fixed window's units lapse then; zero for a bucket
	denied    time.Time // the server denied a take: none is asked for before then
	batch     int64
	refilling bool
	gone      bool // given back: a new stock replaces it
	lastUse   time.Time

	rate      float64 // units per second, smoothed
	rateStart time.Time
	rateCount int64

	local localShare // FallbackLocalShare's in-process limit
}

// localShare is a token bucket or fixed window of Share of the limit.
type localShare struct {
	have  float64
	at    time.Time
	start time.Time // fixed window start
}

// NewLeaser returns a Leaser that takes stock through c.
func NewLeaser(c *Client, o LeaserOptions) *Leaser {
	if o.BatchTime <= 0 {
		o.BatchTime = 100 * time.Millisecond
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 10000
	}
	if o.TTL <= 0 {
		o.TTL = time.Second
	}
	if o.Share <= 0 || o.Share > 1 {
		o.Share = 0.25
	}
	if o.DownFor <= 0 {
		o.DownFor = 200 * time.Millisecond
	}
	l := &Leaser{c: c, opt: o, stocks: make(map[Limit]*stock), stop: make(chan struct{})}
	l.wg.Add(1)
	go l.sweep()
	return l
}

// Allow decides one unit of lim, a Token or Fixed limit; see AllowN.
func (l *Leaser) Allow(ctx context.Context, lim Limit) (bool, error) { return l.AllowN(ctx, lim, 1) }

// AllowN decides n > 0 units of lim from local stock. When the stock cannot pay, the call takes
// what it lacks from the server on its own path (the key's other callers wait for it); when the
// stock falls below half a batch, a background take refills it. An error is the server's refusal
// (ErrWrongType …), an invalid limit or ErrLeaserClosed; an unreachable server is not an error
// but the Fallback's decision.
func (l *Leaser) AllowN(ctx context.Context, lim Limit, n int64) (bool, error) {
	if (lim.algo != AlgoToken && lim.algo != AlgoFixed) || !lim.valid() || n <= 0 {
		return false, fmt.Errorf("%w: a Leaser takes Token and Fixed limits and n > 0 (got %v, n = %d)",
			ErrInvalidLimit, lim.algo, n)
	}
	for {
		s, err := l.stockFor(lim)
		if err != nil {
			return false, err
		}
		s.mu.Lock()
		if s.gone { // given back between the lookup and the lock
			s.mu.Unlock()
			continue
		}
		ok, err := l.spend(ctx, time.Now(), s, n)
		s.mu.Unlock()
		return ok, err
	}
}

// stockFor returns lim's stock, creating it.
func (l *Leaser) stockFor(lim Limit) (*stock, error) {
	l.mu.RLock()
	s, closed := l.stocks[lim], l.closed
	l.mu.RUnlock()
	if closed {
		return nil, ErrLeaserClosed
	}
	if s != nil {
		return s, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrLeaserClosed
	}
	if s = l.stocks[lim]; s == nil {
		s = &stock{lim: lim}
		l.stocks[lim] = s
	}
	return s, nil
}

// spend decides n units on s at now; it requires that s.mu is held.
func (l *Leaser) spend(ctx context.Context, now time.Time, s *stock, n int64) (bool, error) {
	s.lastUse = now
	s.noteRate(now, n)
	if !s.until.IsZero() && !now.Before(s.until) { // a fixed window's units lapse at its end
		s.have, s.until = 0, time.Time{}
	}
	var err error
	if s.have < n && !l.down(now) && !now.Before(s.denied) {
		err = l.take(ctx, s, n-s.have)
	}
	if s.have >= n {
		s.have -= n
		l.count(0, 0, n)
		l.maybeRefill(now, s)
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if l.down(now) {
		return l.fallback(now, s, n), nil
	}
	return false, nil
}

func (l *Leaser) maybeRefill(now time.Time, s *stock) {
	if s.have < max((s.batch+1)/2, 1) && !s.refilling && !l.down(now) && !now.Before(s.denied) {
		s.refilling = true
		l.wg.Add(1)
		go l.refill(s)
	}
}

// noteRate counts n units at now into the rate estimate: samples of at least 100 ms, smoothed
// by halves.
func (s *stock) noteRate(now time.Time, n int64) {
	const sample = 100 * time.Millisecond
	if s.rateStart.IsZero() {
		s.rateStart = now
	}
	s.rateCount += n
	if el := now.Sub(s.rateStart); el >= sample {
		inst := float64(s.rateCount) / el.Seconds()
		if el >= 10*sample || s.rate == 0 {
			s.rate = inst
		} else {
			s.rate = (s.rate + inst) / 2
		}
		s.rateStart, s.rateCount = now, 0
	}
}

// batchSize is the batch to ask for: the recent rate × BatchTime, at least need, at most
// MaxBatch and the limit's capacity (but never below need).
func (l *Leaser) batchSize(s *stock, need int64) int64 {
	b := int64(math.Ceil(s.rate * l.opt.BatchTime.Seconds()))
	b = min(max(b, need, 1), l.opt.MaxBatch, s.lim.count)
	return max(b, need)
}

// take asks the server for [need, batch] units of s's limit on the caller's path and adds what
// it grants. It requires that s.mu is held. A network failure marks the server down and returns
// nil; a server's refusal is returned.
func (l *Leaser) take(ctx context.Context, s *stock, need int64) error {
	b := l.batchSize(s, need)
	s.batch = b
	sent := time.Now()
	g, r, err := l.c.take(ctx, s.lim, need, b)
	if err != nil {
		if ctx.Err() != nil { // the caller gave up: what the take granted, if anything, is lost
			return ctx.Err()
		}
		return l.failed(err)
	}
	s.add(sent, g, r)
	l.count(g, 0, 0)
	return nil
}

// refill is the background take of a stock below its low-water mark.
func (l *Leaser) refill(s *stock) {
	defer l.wg.Done()
	s.mu.Lock()
	b := l.batchSize(s, 1)
	s.batch = b
	s.mu.Unlock()
	sent := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), l.opt.TTL)
	g, r, err := l.c.take(ctx, s.lim, 1, b)
	cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refilling = false
	if err != nil {
		_ = l.failed(err)
		return
	}
	l.count(g, 0, 0)
	if s.gone { // given back meanwhile: these go back at once
		l.giveBack(s.lim, g)
		return
	}
	s.add(sent, g, r)
}

// add puts g granted units into s; a denial (g = 0) holds further takes off until the reply's
// retry after, counted from sent, so that a key over its limit is denied in-process rather than
// by a round trip per call. A fixed window's units are good until the end of the window
// they were counted in, as the reply's reset after counted from sent (before the server
// decided) less one millisecond says; units left from another window lapse.
func (s *stock) add(sent time.Time, g int64, r Result) {
	if g == 0 {
		s.denied = sent.Add(max(r.RetryAfter, 0))
		return
	}
	if s.lim.algo == AlgoFixed {
		until := sent.Add(max(r.ResetAfter-time.Millisecond, 0))
		if s.have > 0 && (until.Sub(s.until) > s.lim.window/2 || s.until.Sub(until) > s.lim.window/2) {
			s.have = 0
		}
		if s.have == 0 || until.Before(s.until) {
			s.until = until
		}
	}
	s.have += g
}

// giveBack refunds g units of a token bucket (RL.TOKEN with −g); a fixed window's units are
// not refunded into what may be the next window, they lapse.
func (l *Leaser) giveBack(lim Limit, g int64) {
	if g <= 0 || lim.algo != AlgoToken {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := l.c.Decide(ctx, lim, -g); err == nil {
		l.count(0, g, 0)
	}
}

// failed records a take's error: the network, a timeout, CLUSTERDOWN or an unknown outcome
// mark the server unreachable for DownFor and are not returned; a refusal is returned.
func (l *Leaser) failed(err error) error {
	var se *ServerError
	if errors.As(err, &se) && !errors.Is(err, ErrClusterDown) && !errors.Is(err, ErrOutcomeUnknown) {
		return err
	}
	l.downUntil.Store(time.Now().Add(l.opt.DownFor).UnixNano())
	return nil
}

func (l *Leaser) down(now time.Time) bool {
	return now.UnixNano() < l.downUntil.Load()
}

// fallback decides n units while the server is unreachable and the stock cannot pay. It
// requires that s.mu is held.
func (l *Leaser) fallback(now time.Time, s *stock, n int64) bool {
	if l.opt.Fallback != FallbackLocalShare {
		return false
	}
	size := max(float64(s.lim.count)*l.opt.Share, 1)
	ls := &s.local
	if s.lim.algo == AlgoToken {
		if ls.at.IsZero() {
			ls.have = size
		} else {
			per := float64(s.lim.rate.n) / s.lim.rate.per.Seconds() * l.opt.Share
			ls.have = min(size, ls.have+now.Sub(ls.at).Seconds()*per)
		}
		ls.at = now
	} else if now.Sub(ls.start) >= s.lim.window || ls.start.IsZero() {
		ls.start, ls.have = now.Truncate(s.lim.window), math.Floor(size)
	}
	if ls.have < float64(n) {
		return false
	}
	ls.have -= float64(n)
	return true
}

// sweep gives back the stock of keys unused for TTL, every TTL/2, until Close.
func (l *Leaser) sweep() {
	defer l.wg.Done()
	t := time.NewTicker(l.opt.TTL / 2)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case now := <-t.C:
			l.mu.Lock()
			var idle []Limit
			var have []int64
			for lim, s := range l.stocks {
				s.mu.Lock()
				if now.Sub(s.lastUse) >= l.opt.TTL && !s.refilling {
					s.gone = true
					delete(l.stocks, lim)
					idle, have = append(idle, lim), append(have, s.have)
					s.have = 0
				}
				s.mu.Unlock()
			}
			l.mu.Unlock()
			for i, lim := range idle {
				l.giveBack(lim, have[i])
			}
		}
	}
}

// Close gives back every key's unspent stock (refunds for token buckets; a fixed window's lapse)
// and waits for background takes. Allow fails with ErrLeaserClosed afterwards.
func (l *Leaser) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	all := l.stocks
	l.stocks = nil
	l.mu.Unlock()
	close(l.stop)
	for _, s := range all {
		s.mu.Lock()
		s.gone = true
		have := s.have
		s.have = 0
		s.mu.Unlock()
		l.giveBack(s.lim, have)
	}
	l.wg.Wait() // a refill that lands after gone gives its units back itself
	return nil
}

// count adds to the Leaser's totals.
func (l *Leaser) count(taken, returned, admitted int64) {
	if taken != 0 {
		l.taken.Add(taken)
	}
	if returned != 0 {
		l.returned.Add(returned)
	}
	if admitted != 0 {
		l.admitted.Add(admitted)
	}
}

// take sends RL.TAKE key ALGO p1 p2 max MIN min and returns the units granted and the decision.
func (c *Client) take(ctx context.Context, lim Limit, minimum, maximum int64) (int64, Result, error) {
	var r Result
	a := getArgv("RL.TAKE", 7)
	a.key(lim.key)
	a.str(lim.algo.String())
	lim.appendParams(a)
	a.int(maximum)
	a.str("MIN")
	a.int(minimum)
	v, err := c.do(ctx, a)
	a.release()
	if err != nil {
		return 0, r, err
	}
	if err := decodeDecision(v, &r); err != nil {
		return 0, r, err
	}
	var g int64
	var ok bool
	if x, list := v.([]any); list && len(x) == 6 && !isString(x[0]) {
		g, ok = asInt(x[5])
	} else {
		eachField(v, func(name string, val any) {
			if name == "granted" {
				g, ok = asInt(val)
			}
		})
	}
	if !ok || g < 0 || g > maximum || (r.Allowed && g < minimum) {
		return 0, r, errReply("RL.TAKE", v)
	}
	return g, r, nil
}
