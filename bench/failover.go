package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-rl/sluice/internal/resp"
)

// A failover trial: clients on the followers of a fresh group send one
// decision at a time (each one always admissible); the leader is killed
// with SIGKILL; the trial times the first admitted decision that a client
// sent after the kill, and notes every other reply the clients saw.

const (
	probesPerNode = 2
	probeTimeout  = 10 * time.Second // one request's reply
	failoverLimit = 30 * time.Second // the kill to every client served again
)

// failoverResult is one trial.
type failoverResult struct {
	killed, elected string
	first           time.Duration // the kill → the first admitted decision sent after it
	all             time.Duration // the kill → every client has had one
	ready           time.Duration // the kill → a survivor reports itself the ready leader
	clientsN        int
	errors          map[string]int // replies to requests sent after the kill that were not admits
	inFlight        map[string]int // what requests sent before the kill and answered after it got
}

func (r *failoverResult) String() string {
	return fmt.Sprintf("killed %s, %s elected; first admitted decision after %s (all %d clients: %s); "+
		"a survivor was the ready leader after %s; replies sent after the kill other than admits: %s; "+
		"requests in flight at the kill: %s",
		r.killed, r.elected, fmtDur(r.first), r.clientsN, fmtDur(r.all), fmtDur(r.ready),
		countSummary(r.errors), countSummary(r.inFlight))
}

// prober is one client connection sending a decision at a time.
type prober struct {
	m      *member
	key    string
	mu     sync.Mutex
	events []probeEvent
}

type probeEvent struct {
	sent, got time.Time
	admitted  bool
	what      string // the reply or the failure, when not admitted
}

// run sends requests until stop is closed, reconnecting after a failure.
func (p *prober) run(stop <-chan struct{}, deadline time.Time) {
	var conn net.Conn
	var br *bufio.Reader
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	req := resp.AppendCommand(nil, "RL.TOKEN", p.key, "1000", "1000000", "1")
	var v resp.Value
	for time.Now().Before(deadline) {
		select {
		case <-stop:
			return
		default:
		}
		if conn == nil {
			c, err := net.DialTimeout("tcp", p.m.resp, time.Second)
			if err != nil {
				p.record(probeEvent{sent: time.Now(), got: time.Now(), what: "connect: " + err.Error()})
				time.Sleep(10 * time.Millisecond)
				continue
			}
			conn, br = c, bufio.NewReader(c)
		}
		ev := probeEvent{sent: time.Now()}
		conn.SetDeadline(ev.sent.Add(probeTimeout))
		_, err := conn.Write(req)
		if err == nil {
			err = resp.Read(br, &v)
		}
		ev.got = time.Now()
		switch {
		case err != nil:
			ev.what = "connection: " + err.Error()
			conn.Close()
			conn = nil
		case v.IsError():
			ev.what = errorKind(string(v.Text))
		default:
			allowed, bad := checkDecision(workload{capacity: 1_000_000}, &v)
			ev.admitted = bad == "" && allowed == 1
			if !ev.admitted {
				ev.what = "not admitted: " + v.String()
			}
		}
		p.record(ev)
	}
}

func (p *prober) record(ev probeEvent) {
	p.mu.Lock()
	p.events = append(p.events, ev)
	p.mu.Unlock()
}

// served returns the first admitted reply to a request sent at or after t.
func (p *prober) served(t time.Time) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ev := range p.events {
		if ev.admitted && !ev.sent.Before(t) {
			return ev.got, true
		}
	}
	return time.Time{}, false
}

// errorKind shortens an error reply to its code and the start of its text.
func errorKind(s string) string {
	return clip(s, 60)
}

func failoverTrial(ctx context.Context, cfg groupConfig) (*failoverResult, error) {
	g, leader, err := startGroup(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer g.stop()
	res := &failoverResult{killed: leader.id, errors: map[string]int{}, inFlight: map[string]int{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var probes []*prober
	deadline := time.Now().Add(failoverLimit + 5*time.Second)
	for _, m := range g.followers(leader) {
		for i := 0; i < probesPerNode; i++ {
			p := &prober{m: m, key: fmt.Sprintf("fo:%s:%d", m.id, i)}
			probes = append(probes, p)
			wg.Add(1)
			go func() { defer wg.Done(); p.run(stop, deadline) }()
		}
	}
	defer func() { close(stop); wg.Wait() }()

	// Every client must be served before the kill, or the trial says nothing.
	before := time.Now()
	for _, p := range probes {
		for {
			if _, ok := p.served(before); ok {
				break
			}
			if time.Since(before) > 5*time.Second || ctx.Err() != nil {
				return nil, fmt.Errorf("client on %s not served before the kill", p.m.id)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	time.Sleep(200 * time.Millisecond)

	var readyAt atomic.Int64
	var elected atomic.Value
	watchStop := make(chan struct{})
	watchDone := make(chan struct{})
	survivors := g.followers(leader)
	// The kill is timed from the moment the leader is reaped. A request
	// sent before then may still have been decided by it: the signal can
	// leave this process a millisecond or more after it sets out to send
	// it (the race detector, a busy machine), time enough for a commit,
	// which would pass for a decision made without the old leader.
	g.crash(leader)
	t0 := time.Now()
	go func() {
		defer close(watchDone)
		for time.Since(t0) < failoverLimit {
			for _, m := range survivors {
				if r, err := m.info(time.Second); err == nil && r["role"] == "leader" && r["ready"] == "true" {
					readyAt.Store(int64(time.Since(t0)))
					elected.Store(m.id)
					return
				}
			}
			select {
			case <-watchStop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()

	for {
		done := true
		for _, p := range probes {
			if _, ok := p.served(t0); !ok {
				done = false
			}
		}
		if done {
			break
		}
		if time.Since(t0) > failoverLimit || ctx.Err() != nil {
			close(watchStop)
			<-watchDone
			return nil, fmt.Errorf("not every client served within %v of the kill; logs in %s", failoverLimit, g.cfg.dir)
		}
		time.Sleep(2 * time.Millisecond)
	}
	close(watchStop)
	<-watchDone
	res.first = failoverLimit
	for _, p := range probes {
		at, _ := p.served(t0)
		res.first = min(res.first, at.Sub(t0))
		res.all = max(res.all, at.Sub(t0))
	}
	res.ready = time.Duration(readyAt.Load())
	if id, ok := elected.Load().(string); ok {
		res.elected = id
	}
	end := t0.Add(res.all)
	for _, p := range probes {
		p.mu.Lock()
		for _, ev := range p.events {
			switch {
			case ev.got.Before(t0) || ev.sent.After(end):
			case ev.sent.Before(t0):
				what := ev.what
				if ev.admitted {
					what = "admitted"
				}
				res.inFlight[what]++
			case !ev.admitted:
				res.errors[ev.what]++
			}
		}
		p.mu.Unlock()
	}
	res.clientsN = len(probes)
	return res, nil
}

func printFailoverSummary(w io.Writer, rs []*failoverResult) {
	var first, all, ready []time.Duration
	errs := map[string]int{}
	for _, r := range rs {
		first = append(first, r.first)
		all = append(all, r.all)
		ready = append(ready, r.ready)
		for k, n := range r.errors {
			errs[k] += n
		}
	}
	m1, lo1, hi1 := medianDur(first)
	m2, lo2, hi2 := medianDur(all)
	m3, lo3, hi3 := medianDur(ready)
	fmt.Fprintf(w, "failover over %d trials: first admitted decision after the kill: median %s (min %s, max %s); "+
		"every client served again: median %s (min %s, max %s); a survivor the ready leader: median %s (min %s, max %s); "+
		"error replies seen by clients in all trials: %s\n",
		len(rs), fmtDur(m1), fmtDur(lo1), fmtDur(hi1), fmtDur(m2), fmtDur(lo2), fmtDur(hi2),
		fmtDur(m3), fmtDur(lo3), fmtDur(hi3), countSummary(errs))
}
