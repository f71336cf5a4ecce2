package lease

import (
	"bytes"
	"errors"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/glob"
	"github.com/sluice-rl/sluice/internal/resp"
)

// Fallback is what a leaseholder does once its stock is spent while the
// upstream cannot be reached.
type Fallback uint8

const (
	// FallbackClosed denies: never more than the upstream's bucket admits.
	FallbackClosed Fallback = iota
	// FallbackLocalShare decides against a local limit of Config.Share of
	// the limit: the service stays up, at the cost of over-admission.
	FallbackLocalShare
)

// ParseFallback reads closed or local-share.
func ParseFallback(s string) (Fallback, bool) {
	switch s {
	case "closed":
		return FallbackClosed, true
	case "local-share":
		return FallbackLocalShare, true
	}
	return 0, false
}

func (f Fallback) String() string {
	if f == FallbackLocalShare {
		return "local-share"
	}
	return "closed"
}

// Config is a tier's configuration; zero fields take the defaults noted.
type Config struct {
	Upstream string // host:port of the upstream sluice (a node or a group's member)
	// User and Password authenticate the tier's connections to the
	// upstream (AUTH [user] password) when Password is set.
	User, Password string
	// Keys is the glob pattern of the keys served from leased stock; ""
	// is every key. The others are forwarded.
	Keys string
	// Hot, if > 0, leases only the Hot keys (of those Keys matches) with
	// the most requests over the last one to two seconds (hot.go).
	Hot      int
	Fallback Fallback
	Share    float64       // FallbackLocalShare's fraction of the limit, in (0, 1]; 0: 0.25
	TTL      time.Duration // a key unused this long returns its stock; 0: 1s
	Timeout  time.Duration // an upstream round trip's deadline; 0: 1s
	// BatchTime is how long a batch should last at the key's recent rate:
	// the batch L is rate × BatchTime, at least 1; 0: 100ms.
	BatchTime time.Duration
	MaxBatch  int64 // the largest batch; 0: 10000
	Logger    *slog.Logger
}

// retryDown is how long after an upstream failure the tier stops asking
// the upstream on a decision's path; probes (background refills) go on.
const retryDown = 200 * time.Millisecond

// Tier is the lease-backed keyspace. Decide serves requests on leased keys
// (a token bucket or fixed window, cost > 0, outside RL.ALL; RL.CHECK's
// of a subject without an override upstream)
// from local stock and forwards the rest; the other Keyspace methods are
// forwarded or refused (keyspace.go). It is safe for concurrent use; New
// starts its background loop, Close ends it and returns the stock.
type Tier struct {
	cfg     Config
	pattern []byte
	hot     *hotKeys // nil: every key the pattern matches is leased
	up      upstream
	log     *slog.Logger

	mu     sync.Mutex
	stocks map[stockKey]*stock

	downUntil atomic.Int64 // Unix ns: until then the upstream counts as unreachable
	st        counters

	stop, done chan struct{}
	closeOnce  sync.Once
}

type stockKey struct {
	key   string
	limit algorithms.Limit
}

// stock is one leased key's tokens. All fields need mu.
type stock struct {
	mu        sync.Mutex
	key       []byte
	limit     algorithms.Limit
	have      int64 // tokens held, unspent
	until     int64 // a fixed window's units are good before this instant; MaxInt64 for a bucket
	lastUse   int64
	refilling bool  // a background take is in flight
	batch     int64 // the last batch asked for; 0 until the key's first take
	short     int64 // the most a request denied for lack of stock lacked, for the next refill
	gone      bool  // ended: its stock was returned
	// ovr is an RL.CHECK subject's override key (nil for other keys);
	// overridden: the upstream has that override, so the subject's
	// requests are forwarded until the lease ends.
	ovr        []byte
	overridden bool

	rateStart, rateCount int64   // the current rate sample
	rate                 float64 // admitted units per second, smoothed

	local  algorithms.TokenState // FallbackLocalShare's state
	localF algorithms.FixedState
}

// counters are the figures of INFO leases and the metrics.
type counters struct {
	refills, refillUnits   atomic.Int64
	returns, returnedUnits atomic.Int64
	lapsedUnits            atomic.Int64
	upstreamErrors         atomic.Int64
	localDecisions         atomic.Int64
	fallbackDecisions      atomic.Int64
	forwarded              atomic.Int64
	syncTakes              atomic.Int64
	lastBatch              atomic.Int64
}

// New returns a tier over cfg.Upstream and starts its background loop
// (lease ends). It does not dial: the first decision does.
func New(cfg Config) *Tier {
	if cfg.Share <= 0 || cfg.Share > 1 {
		cfg.Share = 0.25
	}
	if cfg.TTL <= 0 {
		cfg.TTL = time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Second
	}
	if cfg.BatchTime <= 0 {
		cfg.BatchTime = 100 * time.Millisecond
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 10000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	t := &Tier{cfg: cfg, up: upstream{addr: cfg.Upstream, timeout: cfg.Timeout, user: cfg.User, password: cfg.Password}, log: cfg.Logger,
		stocks: map[stockKey]*stock{}, stop: make(chan struct{}), done: make(chan struct{})}
	if cfg.Keys != "" && cfg.Keys != "*" {
		t.pattern = []byte(cfg.Keys)
	}
	if cfg.Hot > 0 {
		t.hot = newHotKeys(cfg.Hot)
	}
	go t.loop()
	return t
}

// Close ends every lease, returning the unspent tokens to the upstream,
// and stops the background loop. Decisions after Close are forwarded.
func (t *Tier) Close() error {
	t.closeOnce.Do(func() {
		close(t.stop)
		<-t.done
		t.endLeases(math.MaxInt64, true)
		t.up.close()
	})
	return nil
}

// now is the tier's clock for its background work, read here at its edge.
func now() int64 { return time.Now().UnixNano() }

func (t *Tier) loop() {
	defer close(t.done)
	tick := time.NewTicker(min(max(t.cfg.TTL/4, 10*time.Millisecond), 100*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
			at := now()
			if t.hot != nil {
				t.hot.update(at)
			}
			t.endLeases(at, false)
		}
	}
}

// endLeases ends the leases of keys unused for the TTL at now (all of them
// when all): their stock goes back to the upstream with a refund (a
// bucket's) or lapses (a fixed window's, whose units cannot be given back
// into the right window safely).
func (t *Tier) endLeases(now int64, all bool) {
	var ended []*stock
	t.mu.Lock()
	for k, s := range t.stocks {
		s.mu.Lock()
		if all || !s.refilling && now-s.lastUse >= int64(t.cfg.TTL) {
			s.gone = true
			ended = append(ended, s)
			delete(t.stocks, k)
		}
		s.mu.Unlock()
	}
	t.mu.Unlock()
	for _, s := range ended {
		s.mu.Lock()
		n := s.have
		s.have = 0
		s.mu.Unlock()
		if n <= 0 {
			continue
		}
		if s.limit.Algo != algorithms.Token {
			t.st.lapsedUnits.Add(n)
			continue
		}
		t.giveBack(s, n)
	}
}

// giveBack refunds n unspent tokens of s's bucket to the upstream.
func (t *Tier) giveBack(s *stock, n int64) {
	cmd := [][]byte{[]byte("RL.TOKEN"), s.key, rateArg(s.limit.Period), []byte(strconv.FormatInt(s.limit.Count, 10)),
		[]byte(strconv.FormatInt(-n, 10))}
	var dec [5]int64
	err := t.up.do([][][]byte{cmd}, func(_ int, v *resp.Value) error { return ints(v, dec[:]) })
	if err != nil {
		t.failed(err)
		t.st.lapsedUnits.Add(n)
		return
	}
	t.st.returns.Add(1)
	t.st.returnedUnits.Add(n)
}

// failed records an upstream failure: decisions stop asking for a while.
func (t *Tier) failed(err error) {
	var er errReply
	if errors.As(err, &er) {
		return // the upstream answered
	}
	t.st.upstreamErrors.Add(1)
	t.downUntil.Store(now() + int64(retryDown))
	var ea errAuth
	if errors.As(err, &ea) {
		t.log.Error("the upstream refused the tier's AUTH: leased keys spend their stock, then --upstream-fallback decides",
			"upstream", t.cfg.Upstream, "user", t.cfg.User, "err", err)
		return
	}
	t.log.Warn("upstream unreachable", "upstream", t.cfg.Upstream, "err", err)
}

func (t *Tier) down(at int64) bool { return at < t.downUntil.Load() }

// leased reports whether r is served from stock.
func (t *Tier) leased(r *algorithms.Request) bool {
	if !algorithms.Leasable(r.Limit.Algo) || r.N <= 0 || r.Group != 0 || r.Min != 0 {
		return false
	}
	if t.pattern != nil {
		if ok, _, _ := glob.Match(t.pattern, r.Key, false, glob.MaxStars, glob.StepLimit); !ok {
			return false
		}
	}
	return t.hot == nil || t.hot.note(r.Key)
}

// stockFor returns the stock of key under limit, made if absent (with
// the override key ovr of an RL.CHECK, copied).
func (t *Tier) stockFor(key []byte, limit algorithms.Limit, ovr []byte) *stock {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := stockKey{string(key), limit}
	s := t.stocks[k]
	if s == nil {
		s = &stock{key: []byte(k.key), limit: limit, until: math.MaxInt64}
		if ovr != nil {
			s.ovr = bytes.Clone(ovr)
		}
		t.stocks[k] = s
	}
	return s
}
