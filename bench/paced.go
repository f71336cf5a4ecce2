package main

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/internal/resp"
)

// The open-loop load: each connection sends requests on a fixed schedule,
// whether or not the replies to earlier ones have come, as the clients of a
// sidecar do. A request's latency is measured from the instant it was due,
// not from when it was written: a server (or generator) that falls behind
// makes every request after it late, and each of those counts its wait, so
// the latencies are free of coordinated omission.

// maxOutstanding bounds the requests one paced connection has sent and not
// had answered; the sender waits beyond it (the requests it then writes
// late still count from the instant they were due).
const maxOutstanding = 8192

// pacedWorker is one connection of an open-loop run: a sender that writes
// each request when it is due, and a reader that takes the replies in
// order. The sender owns the worker's encoding fields (out, key, now, rng);
// the reader owns its reading and tally fields (r, v, t).
type pacedWorker struct {
	*worker
	due      chan int64    // send instants (ns since the run's epoch) of the requests in flight, in order
	interval time.Duration // between this connection's requests
	phase    time.Duration // this connection's first request, after the epoch
	dues     []int64       // the sender's: the instants of the requests of one write
}

// drivePaced runs ws open-loop at offered requests per second in total,
// shared evenly by the connections, each connection's requests evenly spaced
// and the connections' schedules staggered. Warmup, measure and hard stop are
// drive's; replies that arrive during the measured part are counted. It
// returns the merged tally and the measured wall time.
func drivePaced(l *load, ws []*worker, offered float64, warmup, d time.Duration, hardStop <-chan struct{}, marks measureMarks) (*tally, time.Duration) {
	per := offered / float64(len(ws))
	interval := time.Duration(float64(time.Second) / per)
	epoch := time.Now()
	pws := make([]*pacedWorker, len(ws))
	for i, w := range ws {
		pws[i] = &pacedWorker{worker: w, due: make(chan int64, maxOutstanding), interval: interval,
			phase: interval * time.Duration(i) / time.Duration(len(ws))}
	}
	var senders, readers sync.WaitGroup
	stopSend := make(chan struct{})
	for _, p := range pws {
		senders.Add(1)
		readers.Add(1)
		go func() { defer senders.Done(); p.send(epoch, stopSend) }()
		go func() { defer readers.Done(); p.read(epoch) }()
	}
	finished := make(chan struct{})
	go func() { readers.Wait(); close(finished) }()
	abort := func() {
		l.aborted.Store(true)
		l.phase.Store(phaseStop)
		for _, w := range ws {
			w.conn.Close()
		}
	}
	if !wait(warmup, finished, hardStop) {
		abort()
	}
	marks.start()
	start := time.Now()
	l.phase.CompareAndSwap(phaseWarmup, phaseMeasure)
	if !wait(d, finished, hardStop) {
		abort()
	}
	elapsed := time.Since(start)
	l.phase.Store(phaseStop) // replies from here on are checked, not counted
	marks.end()
	close(stopSend)
	senders.Wait()
	for _, p := range pws {
		close(p.due) // the reader ends once it has taken the replies to what was sent
	}
	select {
	case <-finished:
	case <-hardStop:
		abort()
		<-finished
	}
	total := &tally{hist: newHistogram(), problems: map[string]*problem{}}
	for _, w := range ws {
		w.conn.Close()
		total.merge(&w.t)
	}
	return total, elapsed
}

// send writes this connection's requests as they fall due until stop; the
// requests due at one wake-up (after a late timer) go out in one write.
func (p *pacedWorker) send(epoch time.Time, stop <-chan struct{}) {
	l := p.l
	next := p.phase
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if wait := next - time.Since(epoch); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-stop:
				return
			}
		}
		select {
		case <-stop:
			return
		default:
		}
		now := time.Since(epoch)
		p.now = strconv.AppendInt(p.now[:0], time.Now().Unix(), 10)
		p.out = p.out[:0]
		p.dues = p.dues[:0]
		for ; next <= now; next += p.interval {
			k := p.nextKey()
			l.touched.add(k)
			p.key = appendKey(p.key[:0], l.sc.prefix, k)
			p.out = l.tmpl.encode(p.out, p.key, p.now)
			p.dues = append(p.dues, int64(next))
		}
		for _, d := range p.dues {
			select {
			case p.due <- d:
			case <-stop:
				return // not written: nothing to read for it
			}
		}
		if _, err := p.conn.Write(p.out); err != nil {
			p.lost(len(p.dues), "connection: write: "+err.Error())
			<-stop
			return
		}
	}
}

// read takes the replies in order, each matched with the instant its request
// was due, until the sender has stopped and every request sent is answered.
func (p *pacedWorker) read(epoch time.Time) {
	l := p.l
	reads := p.cc.reads
	var arrived time.Duration
	for due := range p.due {
		if err := resp.Read(p.r, &p.v); err != nil {
			n := 1 + len(p.due)
			p.lost(n, "connection: read: "+err.Error())
			for range p.due { // let the sender finish
			}
			return
		}
		// As in the closed loop, the clock is read once per read from the
		// socket: the replies one read brought arrived together.
		if p.cc.reads != reads || arrived == 0 {
			reads, arrived = p.cc.reads, time.Since(epoch)
		}
		lat := arrived - time.Duration(due)
		allowed, bad := l.sc.check(l.w, &p.v)
		record := l.phase.Load() == phaseMeasure
		switch {
		case bad == "" && !record:
		case bad == "":
			p.t.ok++
			p.t.hist.RecordValue(max(int64(lat), 1))
			if allowed == 1 {
				p.t.allowed++
			} else if allowed == 0 {
				p.t.denied++
			}
		case p.sha != "" && p.v.IsError() && hasPrefix(p.v.Text, "NOSCRIPT"):
			p.t.nosc++ // a fresh server lost its script: not a decision, not reloaded mid-schedule
		default:
			p.t.fail(1, fmt.Sprintf("reply to %s: %s", l.sc.label, bad))
		}
	}
}
