package cluster

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hashicorp/raft"
	"github.com/sluice-rl/sluice/algorithms"
)

// Group commit: submissions that arrive while earlier entries are in flight
// are packed into the next log entry, up to maxOps operations and maxBytes
// bytes. Throughput comes from batching, never from acknowledging anything
// before it is committed.

const (
	maxOps      = 4096
	maxBytes    = 1 << 20
	maxInflight = 8                      // bound on the entries handed to raft and not yet applied (window.limit adapts below it)
	gatherFor   = 500 * time.Microsecond // the longest an entry waits for the clients the last one answered (gather)
	quietFor    = 50 * time.Microsecond  // the pause in their coming back that ends gather's wait
	gatherRest  = 2 * time.Millisecond   // the longest gather waits once half the answered operations are back
	halfAtLeast = 64                     // answered operations below which half of them back says nothing (gather)
	queueLen    = 8192
)

// submission is one caller's operations, applied together in one entry.
// Its caller learns the outcome from done, or, if notify is set, from a
// call to notify instead.
type submission struct {
	now     int64
	ops     []op
	reqs    []algorithms.Request // decisions alone, in place of ops (submitDecisions): the caller's, not copied
	results []result
	err     error
	done    chan struct{}
	notify  func(results []result, err error)
	seq     int64 // the batcher's count of submissions when it was queued
	client  int64 // the connection it came from (CLIENT ID); 0: not told
}

// len is the submission's count of ops: its results.
func (s *submission) len() int { return len(s.ops) + len(s.reqs) }

// size bounds the bytes the submission takes in an entry (opsSize).
func (s *submission) size() int { return opsSize(s.ops) + reqsSize(s.reqs) }

// complete hands the submission its outcome, once.
func (s *submission) complete() {
	if s.notify != nil {
		s.notify(s.results, s.err)
		return
	}
	close(s.done)
}

type batcher struct {
	r      *raft.Raft
	props  *proposals
	in     chan *submission
	window window
	stop   chan struct{}
	seq    atomic.Int64  // submissions queued so far (submission.seq)
	timer  *time.Timer   // gather's, stopped between uses
	quiet  time.Duration // gather's quiet gap: quietFor

	// mu orders submitAsync's sends before close: after close, the loop
	// fails whatever is still queued, and nothing more is queued.
	mu     sync.Mutex
	closed bool

	entries atomic.Int64 // log entries written
	ops     atomic.Int64 // operations in them
	maxSeen atomic.Int64 // the largest batch, in operations
	metrics nodeMetrics  // the node's event counts (metrics.go)
}

func newBatcher(r *raft.Raft, props *proposals) *batcher {
	b := &batcher{
		r:      r,
		props:  props,
		in:     make(chan *submission, queueLen),
		window: window{limit: 2, wake: make(chan struct{}, 1)},
		stop:   make(chan struct{}),
		quiet:  quietFor,
	}
	go b.loop()
	return b
}

// submit queues ops and waits for their results.
func (b *batcher) submit(now int64, ops []op) ([]result, error) {
	s := &submission{now: now, ops: ops, done: make(chan struct{})}
	s.seq = b.seq.Add(1)
	select {
	case b.in <- s:
	case <-b.stop:
		return nil, errNotApplied
	}
	select {
	case <-s.done:
		return s.results, s.err
	case <-b.stop:
		return nil, errUnknown("the node shut down while the request was queued")
	}
}

// submitAll queues several submissions at once, so that they share a log
// entry, and waits for all of them. It returns each one's results or error.
func (b *batcher) submitAll(subs []*submission) ([][]result, []error) {
	results := make([][]result, len(subs))
	errs := make([]error, len(subs))
	queued := 0
enqueue:
	for _, s := range subs {
		s.seq = b.seq.Add(1)
		select {
		case b.in <- s:
			queued++
		case <-b.stop:
			break enqueue
		}
	}
	for i, s := range subs {
		if i >= queued {
			errs[i] = errNotApplied
			continue
		}
		select {
		case <-s.done:
			results[i], errs[i] = s.results, s.err
		case <-b.stop:
			errs[i] = errUnknown("the node shut down while the request was queued")
		}
	}
	return results, errs
}

// submitDecisions queues decisions from client (its CLIENT ID) without
// waiting: notify is called once, from another goroutine, with their
// results or error, and must be done with the results when it returns
// (they go to a later entry). It reports false, having queued nothing, if
// the batcher is closed or its queue is full. reqs must stay as they are
// until notify is called.
func (b *batcher) submitDecisions(now, client int64, reqs []algorithms.Request, notify func([]result, error)) bool {
	return b.queue(&submission{now: now, reqs: reqs, notify: notify, client: client})
}

// queue queues s without waiting; it reports false if the batcher is
// closed or its queue is full.
func (b *batcher) queue(s *submission) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	s.seq = b.seq.Add(1)
	select {
	case b.in <- s:
		return true
	default:
		return false
	}
}

func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	close(b.stop)
}

// failQueued fails the submissions still queued when the batcher stops:
// none of them reached the log. A caller that waits on done has already
// gone (it watches stop); one that is notified learns it here.
func (b *batcher) failQueued() {
	for {
		select {
		case s := <-b.in:
			s.err = errNotApplied
			s.complete()
		default:
			return
		}
	}
}

func (b *batcher) loop() {
	var batch []*submission
	var buf []byte
	for {
		var first *submission
		select {
		case first = <-b.in:
		case <-b.stop:
			b.failQueued()
			return
		}
		// Wait for room in flight; meanwhile more submissions queue up.
		room, ok := b.window.acquire(b.stop)
		if !ok {
			first.err = errNotApplied
			first.complete()
			b.failQueued()
			return
		}
		batch = append(batch[:0], first)
		nops, size := first.len(), first.size()
	drain:
		for nops < maxOps && size < maxBytes {
			select {
			case s := <-b.in:
				batch = append(batch, s)
				nops += s.len()
				size += s.size()
			default:
				break drain
			}
		}
		if room.ops > 0 {
			batch, nops, _ = b.gather(batch, nops, size, room)
		}
		buf = b.encode(buf[:0], batch)
		start := time.Now()
		data := append([]byte(nil), buf...)
		b.props.add(data) // before raft can apply it
		f := b.r.Apply(data, 5*time.Second)
		subs := append([]*submission(nil), batch...)
		b.entries.Add(1)
		b.ops.Add(int64(nops))
		if int64(nops) > b.maxSeen.Load() {
			b.maxSeen.Store(int64(nops))
		}
		go b.finish(f, subs, nops, start, data)
	}
}

// gather waits, after the window was full, for the submissions of the
// clients that the entry which made room has just answered. A client that
// waits for its replies sends its next requests as soon as it has them;
// while entries queue inside the group, taking them into this entry
// instead of the next one saves them an entry's fixed work on every node
// (the log's sync, the round trips, the wake-ups).
//
// gather takes what arrives until all the operations answered have come
// back or the entry is full, and at the latest until gatherFor, or a
// quarter of the answered entry's apply time if less, has passed since the
// answer. While the answered clients themselves keep coming back, each
// within quietFor of the one before, it waits on past that, up to
// gatherFor or the answered entry's whole apply time if less: their
// replies go out one by one, so on a busy node their return takes about as
// long as the entry did. Once half of the operations answered are back
// from the clients answered, and they were at least halfAtLeast, the rest
// are on their way: gather waits for them up to the answered entry's whole
// apply time, or gatherRest if less, however long the pauses between
// them, since other work on a shared CPU (the followers' syncs and
// applies) can hold the replies or their return past quietFor. Arrivals
// from other clients never prolong the wait: under requests that do not
// wait for replies (open loop), a burst of them does not hold the
// submissions already queued, and the answered clients' own requests come
// back only by chance, seldom half of them so soon. gather waits only
// when entries already queue (the window was full), so a lightly loaded
// group never waits. It returns the batch and its counts.
func (b *batcher) gather(batch []*submission, nops, size int, room freed) ([]*submission, int, int) {
	g := room.gathering()
	for _, s := range batch {
		if s.seq > room.seq {
			g.arrive(s, b.quiet)
		}
	}
	wait := time.Until(g.until)
	if g.back >= room.ops || wait <= 0 {
		return batch, nops, size
	}
	if b.timer == nil {
		b.timer = time.NewTimer(wait)
	} else {
		b.timer.Reset(wait)
	}
	defer b.timer.Stop()
	for g.back < room.ops && nops < maxOps && size < maxBytes {
		select {
		case s := <-b.in:
			batch = append(batch, s)
			nops += s.len()
			size += s.size()
			if s.seq > room.seq {
				if until := g.until; g.arrive(s, b.quiet) != until {
					b.timer.Reset(time.Until(g.until))
				}
			}
		case <-b.timer.C:
			return batch, nops, size
		case <-b.stop:
			return batch, nops, size
		}
	}
	return batch, nops, size
}

// gathering is gather's count of what came back after the release room
// and when its wait ends: until, which moves up to last while the
// answered clients come back without a pause, and to rest once half of
// the answered operations are back.
type gathering struct {
	room               freed
	back, fromAnswered int // the operations back; those back from the clients answered (of room.ops)
	until, last, rest  time.Time
}

func (room freed) gathering() gathering {
	return gathering{
		room:  room,
		until: room.at.Add(min(gatherFor, room.took/4)),
		last:  room.at.Add(min(gatherFor, room.took)),
		rest:  room.at.Add(min(gatherRest, room.took)),
	}
}

// arrive counts s, queued after the release, and returns the end of the
// wait it leaves.
func (g *gathering) arrive(s *submission, quiet time.Duration) time.Time {
	g.back += s.len()
	if !g.room.answered(s) {
		return g.until
	}
	g.fromAnswered += s.len()
	if g.room.ops >= halfAtLeast && 2*g.fromAnswered >= g.room.ops && g.rest.After(g.until) {
		g.until = g.rest
	} else {
		g.until = extend(g.until, g.last, quiet)
	}
	return g.until
}

// answered reports whether s came from a client that room answered.
func (room freed) answered(s *submission) bool {
	if s.client == 0 {
		return false
	}
	_, ok := slices.BinarySearch(room.clients, s.client)
	return ok
}

// extend returns until, or quiet from now if that is later, never past
// last unless until already is.
func extend(until, last time.Time, quiet time.Duration) time.Time {
	u := time.Now().Add(quiet)
	if u.After(last) {
		u = last
	}
	if u.After(until) {
		return u
	}
	return until
}

// opsSize bounds the bytes ops take in an entry: their keys and ids, and
// at most 48 bytes of numbers and lengths each.
func opsSize(ops []op) int {
	n := 0
	for i := range ops {
		n += reqSize(&ops[i].req) + len(ops[i].addr) + len(ops[i].id)
		for _, w := range ops[i].watches {
			n += 8 + len(w.Key)
		}
		for _, k := range ops[i].keys {
			n += 10 + len(k)
		}
	}
	return n
}

// reqsSize is opsSize for decisions.
func reqsSize(reqs []algorithms.Request) int {
	n := 0
	for i := range reqs {
		n += reqSize(&reqs[i])
	}
	return n
}

// reqSize bounds the bytes a decision takes in an entry, fixed fields
// included.
func reqSize(r *algorithms.Request) int { return 48 + len(r.Key) + len(r.ID) + len(r.Override) }

// encode packs the submissions into one entry stamped with the latest of
// their instants, renumbering RL.ALL groups so that no two groups of
// different submissions (or of one) merge.
func (b *batcher) encode(buf []byte, subs []*submission) []byte {
	var now int64
	count := 0
	for _, s := range subs {
		now = max(now, s.now)
		count += s.len()
	}
	buf = appendBatchHead(buf, now, count)
	var g groupNumbers
	for _, s := range subs {
		g.prev = 0
		for i := range s.ops {
			o := &s.ops[i]
			if o.code != opDecide {
				g.prev = 0
				buf = appendOp(buf, o)
				continue
			}
			buf = appendDecide(buf, &o.req, g.of(o.req.Group))
		}
		for i := range s.reqs {
			buf = appendDecide(buf, &s.reqs[i], g.of(s.reqs[i].Group))
		}
	}
	return buf
}

// groupNumbers renumbers the RL.ALL groups of an entry's submissions: each
// run of decisions in one nonzero group of a submission gets the entry's
// next number.
type groupNumbers struct {
	n, prev int32
}

func (g *groupNumbers) of(group int32) int32 {
	if group == 0 {
		g.prev = 0
		return 0
	}
	if group != g.prev {
		g.n++
		g.prev = group
	}
	return g.n
}

// finish waits for an entry to be applied and hands each submission its
// results (nops operations in all); an entry applied counts its time
// since start (raft.Apply).
func (b *batcher) finish(f raft.ApplyFuture, subs []*submission, nops int, start time.Time, data []byte) {
	err := f.Error()
	b.props.remove(data)
	took := time.Since(start)
	if err == nil {
		b.metrics.observeApply(took)
	}
	b.window.release(took, time.Now(), err == nil, nops, b.seq.Load(), clientsOf(subs))
	var results []result
	if err == nil {
		resp, _ := f.Response().(applyResponse)
		results, err = resp.results, resp.err
	} else {
		err = applyError(err)
	}
	off := 0
	copied := true // every caller copies its results before notify returns
	for _, s := range subs {
		switch {
		case err != nil:
			s.err = err
		case off+s.len() <= len(results):
			s.results = results[off : off+s.len() : off+s.len()]
		default: // applied, but the state machine kept no results for it
			s.err = errUnknown("the entry was applied without its results")
		}
		off += s.len()
		copied = copied && s.notify != nil
		s.complete()
	}
	if copied && results != nil {
		b.props.giveBack(results)
	}
}

// clientsOf returns the clients that subs came from, sorted, each once.
func clientsOf(subs []*submission) []int64 {
	var ids []int64
	for _, s := range subs {
		if s.client != 0 {
			ids = append(ids, s.client)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// proposals are the entries the batcher has handed to raft and still waits
// on, by the address of their data: the leader's state machine applies the
// very slice given to raft.Apply, so it can tell its own entries, whose
// results a submission reads, from entries that came from the network,
// whose results nobody reads (stateMachine.Apply). They also keep the
// results of applied entries that no caller holds any more, for the state
// machine's next entries (giveBack, results): an entry's results are
// otherwise a fresh allocation of about 100 bytes a decision.
type proposals struct {
	mu    sync.Mutex
	m     map[*byte]struct{}
	spare [][]result // at most maxSpare
}

// maxSpare bounds the results kept for reuse: one entry in flight needs
// one, the window's limit more.
const maxSpare = 4

// giveBack keeps rs for a later entry. Nothing may refer to rs any more.
func (p *proposals) giveBack(rs []result) {
	p.mu.Lock()
	if len(p.spare) < maxSpare {
		p.spare = append(p.spare, rs)
	}
	p.mu.Unlock()
}

// results returns n zeroed results for an entry of the leader's own: kept
// ones if large enough, else new ones. p may be nil (no batcher).
func (p *proposals) results(n int) []result {
	var rs []result
	if p != nil {
		p.mu.Lock()
		if k := len(p.spare); k > 0 {
			rs = p.spare[k-1]
			p.spare[k-1] = nil
			p.spare = p.spare[:k-1]
		}
		p.mu.Unlock()
	}
	if cap(rs) < n {
		return make([]result, n)
	}
	rs = rs[:n]
	clear(rs)
	return rs
}

func (p *proposals) add(data []byte) {
	p.mu.Lock()
	if p.m == nil {
		p.m = make(map[*byte]struct{})
	}
	p.m[unsafe.SliceData(data)] = struct{}{}
	p.mu.Unlock()
}

func (p *proposals) remove(data []byte) {
	p.mu.Lock()
	delete(p.m, unsafe.SliceData(data))
	p.mu.Unlock()
}

func (p *proposals) has(data []byte) bool {
	if len(data) == 0 {
		return false
	}
	p.mu.Lock()
	_, ok := p.m[unsafe.SliceData(data)]
	p.mu.Unlock()
	return ok
}

// window bounds the entries in flight. Its limit follows the time an entry
// takes to apply, as a delay-based congestion window does: while that time
// stays near the least seen, the group has room and one more entry in
// flight shortens the wait of the next submissions; once it grows past
// twice the least, entries queue inside the group, where each more one only
// adds its fixed cost (fsyncs, a round trip, wake-ups), so the limit falls
// and submissions gather into fewer, larger entries. On two shared cores
// the limit settles at 1–2; where disks and the network, not the CPU, set
// the time, it rises toward maxInflight.
type window struct {
	mu       sync.Mutex
	inflight int
	limit    int           // 1..maxInflight
	avg      time.Duration // moving average of the apply time (1/8 weight)
	least    time.Duration // the least apply time since leastAt
	leastAt  time.Time
	wake     chan struct{} // a release since the last acquire looked
	last     freed         // the latest release's
}

// freed describes an entry released from the window: the operations it
// answered and the clients it answered them for (sorted), the batcher's
// submission count (submission.seq) at the release, when that was, and how
// long the entry took to apply.
type freed struct {
	ops     int
	clients []int64
	seq     int64
	at      time.Time
	took    time.Duration
}

// leastFor is how long the least apply time stands before a newer one
// replaces it, so that the limit follows a disk or network that slowed.
const leastFor = 10 * time.Second

// acquire waits until fewer than limit entries are in flight and counts
// one more; ok false if stop closed first. If it had to wait, room is the
// release that made room; otherwise room is zero.
func (w *window) acquire(stop <-chan struct{}) (room freed, ok bool) {
	waited := false
	for {
		w.mu.Lock()
		if w.inflight < w.limit {
			w.inflight++
			if waited {
				room = w.last
			}
			w.mu.Unlock()
			return room, true
		}
		w.mu.Unlock()
		waited = true
		select {
		case <-w.wake:
		case <-stop:
			return freed{}, false
		}
	}
}

// release counts an entry out of flight that took took to apply (at now;
// ok false: it failed, and its time says nothing of the group's). It
// answered ops operations for clients, with seq submissions queued so far.
func (w *window) release(took time.Duration, now time.Time, ok bool, ops int, seq int64, clients []int64) {
	w.mu.Lock()
	w.inflight--
	w.last = freed{} // a failed entry's clients were refused: nothing to gather
	if ok {
		w.last = freed{ops: ops, clients: clients, seq: seq, at: now, took: took}
		w.limit = w.adapt(took, now)
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// adapt returns the limit after an entry that took took; adapt requires
// that w.mu is held.
func (w *window) adapt(took time.Duration, now time.Time) int {
	if w.least == 0 || took < w.least || now.Sub(w.leastAt) > leastFor {
		w.least, w.leastAt = took, now
	}
	if w.avg == 0 {
		w.avg = took
	}
	w.avg += (took - w.avg) / 8
	switch {
	case w.avg > 2*w.least && w.limit > 1:
		return w.limit - 1
	case w.avg < w.least*3/2 && w.limit < maxInflight && w.inflight+1 >= w.limit:
		return w.limit + 1
	}
	return w.limit
}

// applyError turns raft's error into what the client is told: nothing was
// applied (retry elsewhere), or the outcome is unknown.
func applyError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress),
		errors.Is(err, raft.ErrEnqueueTimeout):
		return errNotApplied
	default:
		return errUnknown(err.Error())
	}
}
