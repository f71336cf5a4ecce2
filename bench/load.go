package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/sluice-rl/sluice/internal/resp"
	"github.com/sluice-rl/sluice/keyslot"
)

// The load itself: closed-loop connections, each writing a batch of depth
// requests, reading every reply, checking it, and recording the latency of
// each request as the time from its batch's write to the return of the
// read that brought its reply.

const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseStop
)

// Latencies are recorded in nanoseconds, 3 significant digits, up to 60 s.
func newHistogram() *hdrhistogram.Histogram { return hdrhistogram.New(1, 60e9, 3) }

// load is one run's shared state.
type load struct {
	sc      *scenario
	w       workload
	tmpl    template
	depth   int
	keys    uint64
	zipf    float64
	phase   atomic.Int32
	budget  atomic.Int64 // requests left to measure in count mode
	counted bool         // count mode: stop when budget runs out
	aborted atomic.Bool  // stopped by Ctrl-C or the hard time limit: errors that follow are not the server's
	touched *keySet
}

// tally is what one connection measured; tallies are merged at the end.
type tally struct {
	hist                              *hdrhistogram.Histogram
	ok, errors, allowed, denied, nosc int64
	problems                          map[string]*problem
}

// problem is one kind of failure: how often it happened, with an example.
type problem struct {
	count   int64
	example string
}

const maxProblemKinds = 8

func (t *tally) fail(n int64, what string) {
	if n <= 0 {
		return
	}
	t.errors += n
	kind := clip(what, 48)
	p := t.problems[kind]
	if p == nil {
		if len(t.problems) >= maxProblemKinds {
			kind = "(other)"
			if p = t.problems[kind]; p == nil {
				p = &problem{example: what}
				t.problems[kind] = p
			}
		} else {
			p = &problem{example: what}
			t.problems[kind] = p
		}
	}
	p.count += n
}

// merge adds o's counts and latencies (none if o.hist is nil) to t's.
func (t *tally) merge(o *tally) {
	if o.hist != nil {
		t.hist.Merge(o.hist)
	}
	t.ok += o.ok
	t.errors += o.errors
	t.allowed += o.allowed
	t.denied += o.denied
	t.nosc += o.nosc
	for k, p := range o.problems {
		if q := t.problems[k]; q != nil {
			q.count += p.count
		} else {
			t.problems[k] = &problem{count: p.count, example: p.example}
		}
	}
}

// sortedProblems lists the problems, most frequent first.
func (t *tally) sortedProblems() []problem {
	var out []problem
	for _, p := range t.problems {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].count > out[j].count })
	return out
}

// worker is one connection.
type worker struct {
	l       *load
	conn    net.Conn
	cc      countingConn // conn, counting its reads: the reader's fills
	r       *bufio.Reader
	out     []byte
	key     []byte
	now     []byte
	v       resp.Value
	rng     *rand.Rand
	zipf    *rand.Zipf
	t       tally
	sha     string
	scratch []byte
	// legs, for a sharded cluster, are one connection to each group's
	// leader (legs[0].conn is conn) and route the slot table that picks
	// one; nil for a single server.
	legs  []*leg
	route *slotMap
}

// leg is a worker's connection to one group of a sharded cluster, with the
// part of the current batch routed to it.
type leg struct {
	conn net.Conn
	cc   countingConn
	r    *bufio.Reader
	out  []byte
	n    int
}

// close closes the worker's connections.
func (w *worker) close() {
	w.conn.Close()
	for _, lg := range w.legs[min(1, len(w.legs)):] {
		lg.conn.Close()
	}
}

func newWorker(l *load, conn net.Conn, seed uint64, sha string) *worker {
	w := &worker{l: l, conn: conn, sha: sha,
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		t:   tally{hist: newHistogram(), problems: map[string]*problem{}}}
	w.cc.Conn = conn
	w.r = bufio.NewReaderSize(&w.cc, 64<<10)
	if l.zipf > 1 && l.keys > 1 {
		w.zipf = rand.NewZipf(w.rng, l.zipf, 1, l.keys-1)
	}
	return w
}

func (w *worker) nextKey() uint64 {
	switch {
	case w.l.keys <= 1:
		return 0
	case w.zipf != nil:
		return w.zipf.Uint64()
	default:
		return w.rng.Uint64N(w.l.keys)
	}
}

// batch returns the size of the next batch in phase ph, 0 when the count
// mode's budget is spent.
func (w *worker) batch(ph int32) int {
	l := w.l
	n := l.depth
	if ph == phaseMeasure && l.counted {
		left := l.budget.Add(-int64(n))
		if left+int64(n) <= 0 {
			return 0
		}
		if left < 0 {
			n += int(left)
		}
	}
	return n
}

// encodeBatch puts n requests on keys drawn for the run into w.out.
func (w *worker) encodeBatch(n int) {
	l := w.l
	w.now = strconv.AppendInt(w.now[:0], time.Now().Unix(), 10)
	w.out = w.out[:0]
	for i := 0; i < n; i++ {
		k := w.nextKey()
		l.touched.add(k)
		w.key = appendKey(w.key[:0], l.sc.prefix, k)
		w.out = l.tmpl.encode(w.out, w.key, w.now)
	}
}

// run sends batches until the load stops.
func (w *worker) run() {
	if w.legs != nil {
		w.runSharded()
		return
	}
	l := w.l
	for {
		ph := l.phase.Load()
		if ph == phaseStop {
			return
		}
		n := w.batch(ph)
		if n == 0 {
			return
		}
		w.encodeBatch(n)
		record := ph == phaseMeasure
		t0 := time.Now()
		if _, err := w.conn.Write(w.out); err != nil {
			w.lost(n, "connection: write: "+err.Error())
			return
		}
		reload := false
		// A reply arrived when the read that brought its last byte
		// returned: the clock is read once per read from the socket, not
		// once per reply.
		var arrived time.Time
		reads := w.cc.reads
		for i := 0; i < n; i++ {
			if err := resp.Read(w.r, &w.v); err != nil {
				w.lost(n-i, "connection: read: "+err.Error())
				return
			}
			if w.cc.reads != reads || arrived.IsZero() {
				reads, arrived = w.cc.reads, time.Now()
			}
			if w.account(record, arrived.Sub(t0)) {
				reload = true
			}
		}
		if reload {
			if err := w.loadScript(); err != nil {
				w.t.fail(1, "SCRIPT LOAD after NOSCRIPT: "+err.Error())
				return
			}
		}
	}
}

// account checks the reply in w.v and counts it, with its latency if record.
// It reports whether the reply was NOSCRIPT (the script is to be loaded
// again).
func (w *worker) account(record bool, lat time.Duration) (noscript bool) {
	l := w.l
	allowed, bad := l.sc.check(l.w, &w.v) // warmup replies are checked too
	switch {
	case bad == "" && !record:
	case bad == "":
		w.t.ok++
		w.t.hist.RecordValue(int64(lat))
		if allowed == 1 {
			w.t.allowed++
		} else if allowed == 0 {
			w.t.denied++
		}
	case w.sha != "" && w.v.IsError() && hasPrefix(w.v.Text, "NOSCRIPT"):
		w.t.nosc++ // not a decision: the script is loaded again
		return true
	default:
		w.t.fail(1, fmt.Sprintf("reply to %s: %s", l.sc.label, bad))
	}
	return false
}

// runSharded sends batches to a sharded cluster as a cluster client's
// pipeline does: each request goes to the leader of the group whose slots
// hold its key (keyslot.Of, the slot table from CLUSTER SLOTS), every
// group's part in one write, and the replies are read group by group. A
// request's latency runs from the first write of its batch to the read
// that brought its reply. A redirection (MOVED, TRYAGAIN) fails its check:
// the run counts it as an error.
func (w *worker) runSharded() {
	l := w.l
	for {
		ph := l.phase.Load()
		if ph == phaseStop {
			return
		}
		n := w.batch(ph)
		if n == 0 {
			return
		}
		w.now = strconv.AppendInt(w.now[:0], time.Now().Unix(), 10)
		for _, lg := range w.legs {
			lg.out, lg.n = lg.out[:0], 0
		}
		for i := 0; i < n; i++ {
			k := w.nextKey()
			l.touched.add(k)
			w.key = appendKey(w.key[:0], l.sc.prefix, k)
			lg := w.legs[w.route.owner[keyslot.Of(w.key)]]
			lg.out = l.tmpl.encode(lg.out, w.key, w.now)
			lg.n++
		}
		record := ph == phaseMeasure
		t0 := time.Now()
		for _, lg := range w.legs {
			if lg.n == 0 {
				continue
			}
			if _, err := lg.conn.Write(lg.out); err != nil {
				w.lost(n, "connection: write: "+err.Error())
				return
			}
		}
		for _, lg := range w.legs {
			var arrived time.Time
			reads := lg.cc.reads
			for i := 0; i < lg.n; i++ {
				if err := resp.Read(lg.r, &w.v); err != nil {
					w.lost(lg.n-i, "connection: read: "+err.Error())
					return
				}
				if lg.cc.reads != reads || arrived.IsZero() {
					reads, arrived = lg.cc.reads, time.Now()
				}
				w.account(record, arrived.Sub(t0))
			}
		}
	}
}

// countingConn counts the reads from its connection.
type countingConn struct {
	net.Conn
	reads int
}

func (c *countingConn) Read(p []byte) (int, error) {
	c.reads++
	return c.Conn.Read(p)
}

// lost counts requests that got no reply because the connection failed,
// unless bench itself closed it to abort the run.
func (w *worker) lost(n int, why string) {
	if !w.l.aborted.Load() {
		w.t.fail(int64(n), why)
	}
}

// loadScript loads the scenario's script on this connection (after
// NOSCRIPT: the server lost its script cache).
func (w *worker) loadScript() error {
	w.scratch = resp.AppendCommand(w.scratch[:0], "SCRIPT", "LOAD", w.l.sc.lua)
	if _, err := w.conn.Write(w.scratch); err != nil {
		return err
	}
	if err := resp.Read(w.r, &w.v); err != nil {
		return err
	}
	if w.v.Kind != '$' || string(w.v.Text) != w.sha {
		return fmt.Errorf("want the script's SHA1 %s, got %s", w.sha, w.v.String())
	}
	return nil
}

func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }

// keySet records which keys a run touched, for memory per key.
type keySet struct {
	bits []atomic.Uint64
}

func newKeySet(n uint64) *keySet { return &keySet{bits: make([]atomic.Uint64, (n+63)/64)} }

func (s *keySet) add(k uint64) {
	w := &s.bits[k/64]
	if m := uint64(1) << (k % 64); w.Load()&m == 0 {
		w.Or(m)
	}
}

func (s *keySet) count() int64 {
	var n int
	for i := range s.bits {
		n += popcount(s.bits[i].Load())
	}
	return int64(n)
}

func popcount(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// dialWorkers opens conns connections to addr; to a sharded cluster, conns
// workers of one connection to each group's leader.
func dialWorkers(l *load, srv *server, conns int, sha string) ([]*worker, error) {
	var ws []*worker
	fail := func(addr string, err error) ([]*worker, error) {
		for _, w := range ws {
			w.close()
		}
		return nil, fmt.Errorf("connect %s: %w", addr, err)
	}
	for i := 0; i < conns; i++ {
		if srv.shards == nil {
			c, err := srv.dial(5*time.Second, true)
			if err != nil {
				return fail(srv.addr, err)
			}
			ws = append(ws, newWorker(l, c, uint64(i)+1, sha))
			continue
		}
		var legs []*leg
		for _, addr := range srv.shards.addrs {
			c, err := (&server{addr: addr}).dial(5*time.Second, false)
			if err != nil {
				for _, lg := range legs {
					lg.conn.Close()
				}
				return fail(addr, err)
			}
			lg := &leg{conn: c}
			lg.cc.Conn = c
			lg.r = bufio.NewReaderSize(&lg.cc, 64<<10)
			legs = append(legs, lg)
		}
		w := newWorker(l, legs[0].conn, uint64(i)+1, sha)
		w.legs, w.route = legs, srv.shards
		ws = append(ws, w)
	}
	return ws, nil
}

// measureMarks are called where a run's measured part starts and where it
// ends, to read what is measured beside the requests (CPU times).
type measureMarks struct{ start, end func() }

// drive runs the workers: warmup, then the measured part, which lasts d or,
// in count mode, until the budget is spent, and ends when the last batch
// sent in it is answered. It returns the merged tally and the measured wall
// time. hardStop closes the connections if the run outlives its bound.
func drive(l *load, ws []*worker, warmup, d time.Duration, hardStop <-chan struct{}, marks measureMarks) (*tally, time.Duration) {
	var wg sync.WaitGroup
	finished := make(chan struct{})
	for _, w := range ws {
		wg.Add(1)
		go func() { defer wg.Done(); w.run() }()
	}
	go func() { wg.Wait(); close(finished) }()
	abort := func() {
		l.aborted.Store(true)
		l.phase.Store(phaseStop)
		for _, w := range ws {
			w.close()
		}
	}
	if !wait(warmup, finished, hardStop) {
		abort()
	}
	marks.start()
	start := time.Now()
	l.phase.CompareAndSwap(phaseWarmup, phaseMeasure)
	if l.counted {
		select {
		case <-finished:
		case <-hardStop:
			abort()
		}
	} else if !wait(d, finished, hardStop) {
		abort()
	}
	l.phase.Store(phaseStop)
	select {
	case <-finished:
	case <-hardStop:
		abort()
		<-finished
	}
	elapsed := time.Since(start)
	marks.end()
	total := &tally{hist: newHistogram(), problems: map[string]*problem{}}
	for _, w := range ws {
		w.close()
		total.merge(&w.t)
	}
	return total, elapsed
}

// wait sleeps for d; it returns false if hardStop fired first. It returns
// early, true, if every worker finished.
func wait(d time.Duration, finished, hardStop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-finished:
		return true
	case <-hardStop:
		return false
	}
}
