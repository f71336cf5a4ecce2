package lease_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/client/sluicetest"
)

// delayProxy forwards each accepted connection to target, holding every
// chunk read in either direction for delay before writing it on, in order.
// Each direction queues at most 64 chunks (reading stops while full). Close
// stops accepting and closes every connection.
type delayProxy struct {
	ln     net.Listener
	target string
	delay  time.Duration
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
	wg     sync.WaitGroup
}

func startDelayProxy(t *testing.T, target string, delay time.Duration) *delayProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &delayProxy{ln: ln, target: target, delay: delay}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

func (p *delayProxy) Addr() string { return p.ln.Addr().String() }

func (p *delayProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, u) {
			return
		}
		p.wg.Add(2)
		go p.pipe(u, c)
		go p.pipe(c, u)
	}
}

// track records c and u for Close; false (both closed) if p is closed.
func (p *delayProxy) track(c, u net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		u.Close()
		return false
	}
	p.conns = append(p.conns, c, u)
	return true
}

type chunk struct {
	due  time.Time
	data []byte
}

// pipe copies src to dst, each chunk written delay after it was read. When
// either side ends, both are closed.
func (p *delayProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	q := make(chan chunk, 64)
	go func() {
		defer close(q)
		for {
			b := make([]byte, 32<<10)
			n, err := src.Read(b)
			if n > 0 {
				q <- chunk{time.Now().Add(p.delay), b[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
	for range q { // let the reader finish
	}
}

func (p *delayProxy) Close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	p.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	p.wg.Wait()
}

// TestDelayProxyDelaysEachWay: a PING through the proxy takes at least two
// delays (one each way) and its reply arrives intact.
func TestDelayProxyDelaysEachWay(t *testing.T) {
	up := sluicetest.Start(t)
	p := startDelayProxy(t, up.Addr, 50*time.Millisecond)
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1, DisableIndentity: true})
	defer rdb.Close()
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		start := time.Now()
		if v, err := rdb.Ping(ctx).Result(); err != nil || v != "PONG" {
			t.Fatalf("PING through the proxy = %q, %v", v, err)
		}
		if d := time.Since(start); d < 100*time.Millisecond {
			t.Fatalf("PING through a 50 ms proxy took %v; want at least 100 ms", d)
		}
	}
}

// region is one region's leaseholder tier, reached locally, whose link to
// the upstream goes through a delay proxy.
type region struct {
	tier     *sluicetest.Server
	admitted atomic.Int64
	mu       sync.Mutex
	lat      []time.Duration // each decision's round trip from a client in the region
	last     atomic.Int64    // Unix ns of the last admission
}

// hammerTimed is hammer that records each decision's latency in rg.
func hammerTimed(rdb *redis.Client, rg *region, stop <-chan struct{}, wg *sync.WaitGroup, errs chan<- error) {
	defer wg.Done()
	ctx := context.Background()
	var lat []time.Duration
	defer func() {
		rg.mu.Lock()
		rg.lat = append(rg.lat, lat...)
		rg.mu.Unlock()
	}()
	for {
		select {
		case <-stop:
			return
		default:
		}
		start := time.Now()
		v, err := rdb.Do(ctx, "RL.TOKEN", "hot", "1000/s", 100).Slice()
		if err != nil {
			errs <- err
			return
		}
		lat = append(lat, time.Since(start))
		if v[0] == int64(1) {
			rg.admitted.Add(1)
			rg.last.Store(time.Now().UnixNano())
		}
	}
}

func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

// TestTwoRegionsHoldTheGlobalLimitAndDecideLocally: one upstream, two
// regions each with a leaseholder tier whose link to the upstream adds
// 50 ms each way, one hot key at 1000/s capacity 100 hammered in both
// regions for 2 s. The total admitted stays within the upstream's bucket,
// 100 + 1000·t; and decisions answer at local latency, well below one
// link delay, because a decision never waits for the upstream while its
// region holds stock.
func TestTwoRegionsHoldTheGlobalLimitAndDecideLocally(t *testing.T) {
	up := sluicetest.Start(t)
	const delay = 50 * time.Millisecond
	regions := make([]*region, 2)
	for i := range regions {
		p := startDelayProxy(t, up.Addr, delay)
		regions[i] = &region{tier: sluicetest.Start(t, "--upstream", p.Addr())}
	}
	stop := make(chan struct{})
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	start := time.Now()
	for _, rg := range regions {
		rdb := rg.tier.Client(2)
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go hammerTimed(rdb, rg, stop, &wg, errs)
		}
	}
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a decision through a region's tier: %v", err)
	}
	var last int64
	var got int64
	for _, rg := range regions {
		got += rg.admitted.Load()
		last = max(last, rg.last.Load())
	}
	// start is before the first take; the span ends at the last admission.
	span := time.Duration(last - start.UnixNano())
	bound := 100 + int64(1000*span.Seconds())
	t.Logf("admitted %d (%d + %d) in %v through 2 regions; the bound 100 + 1000·t is %d: under by %d (%.1f%%)",
		got, regions[0].admitted.Load(), regions[1].admitted.Load(), span.Round(time.Millisecond),
		bound, bound-got, 100*float64(bound-got)/float64(bound))
	if got > bound {
		t.Fatalf("admitted %d in %v; the upstream's bucket admits at most %d", got, span, bound)
	}
	if got < 100 {
		t.Fatalf("admitted %d: the regions served nothing", got)
	}
	for i, rg := range regions {
		if len(rg.lat) < 100 {
			t.Fatalf("region %d decided %d requests in 2 s", i, len(rg.lat))
		}
		p50, p99, p999 := quantile(rg.lat, 0.5), quantile(rg.lat, 0.99), quantile(rg.lat, 0.999)
		t.Logf("region %d: %d decisions, latency p50 %v p99 %v p99.9 %v max %v", i, len(rg.lat),
			p50, p99, p999, slices.Max(rg.lat))
		// A decision that waited for the upstream takes at least a round trip
		// through the proxy (2 × delay). Only a key's first take may; a loaded
		// machine can stall a few others as long, so the check is on the share
		// of decisions that took a round trip, not on a percentile's speed.
		waited := 0
		for _, d := range rg.lat {
			if d >= 2*delay {
				waited++
			}
		}
		if p50 >= delay || waited*100 > len(rg.lat) {
			t.Errorf("region %d: p50 %v, %d of %d decisions took a round trip (%v) or more; want local decisions",
				i, p50, waited, len(rg.lat), 2*delay)
		}
	}
}
