package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// The RLS load generator: closed-loop callers of
// envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit, as Envoy
// makes them (one unary call per request, one descriptor, many calls in
// flight on a few HTTP/2 connections). Each caller sends a call, waits for
// the answer, checks it, records its latency, and sends the next. The
// calls go out through an rlsTransport (rlstransports.go).

// rlsDomain and rlsRules are the rules both services load: one fixed window
// per client address, high enough that the load stays within it.
const (
	rlsDomain = "bench"
	rlsLimit  = 1_000_000
	rlsRules  = "domain: bench\ndescriptors:\n  - key: remote_address\n    rate_limit: {unit: minute, requests_per_unit: 1000000}\n"
)

// rlsLoad is one run's load: callers spread over conns connections.
type rlsLoad struct {
	callers, conns int
	keys           uint64
	phase          atomic.Int32
}

// rlsCaller is one closed loop.
type rlsCaller struct {
	l    *rlsLoad
	do   rlsCall
	rng  *rand.Rand
	t    tally
	keys int
}

// rlsCall makes the call for prebuilt request number k and returns the
// decoded answer, valid until the next call.
type rlsCall func(k int) (*rlsv3.RateLimitResponse, error)

// rlsRequests are a run's calls: the same pseudo-random set of client
// addresses for every run, at most 65536 of them.
func rlsRequests(keys uint64) []*rlsv3.RateLimitRequest {
	reqs := make([]*rlsv3.RateLimitRequest, min(keys, 65536))
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range reqs {
		reqs[i] = rlsRequest(rng.Uint64N(keys))
	}
	return reqs
}

// rlsRequest is the call for client address number k.
func rlsRequest(k uint64) *rlsv3.RateLimitRequest {
	return &rlsv3.RateLimitRequest{Domain: rlsDomain, Descriptors: []*ratelimitv3.RateLimitDescriptor{{
		Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "10." + strconv.FormatUint(k>>16&255, 10) +
			"." + strconv.FormatUint(k>>8&255, 10) + "." + strconv.FormatUint(k&255, 10)}},
	}}}
}

// checkRLS checks an answer to a one-descriptor call: a status with the
// rule's limit, OK with what is left, or OVER_LIMIT.
func checkRLS(resp *rlsv3.RateLimitResponse) (allowed bool, problem string) {
	if len(resp.GetStatuses()) != 1 {
		return false, fmt.Sprintf("%d statuses for one descriptor", len(resp.GetStatuses()))
	}
	st := resp.Statuses[0]
	lim := st.GetCurrentLimit()
	switch {
	case lim.GetRequestsPerUnit() != rlsLimit || lim.GetUnit() != rlsv3.RateLimitResponse_RateLimit_MINUTE:
		return false, "current_limit " + lim.String() + "; want 1000000 per MINUTE"
	case st.GetCode() != resp.GetOverallCode():
		return false, "status " + st.GetCode().String() + " under overall " + resp.GetOverallCode().String()
	case st.GetCode() == rlsv3.RateLimitResponse_OK && st.GetLimitRemaining() >= rlsLimit:
		return false, "OK with limit_remaining " + strconv.FormatUint(uint64(st.GetLimitRemaining()), 10)
	case st.GetCode() == rlsv3.RateLimitResponse_OK:
		return true, ""
	case st.GetCode() == rlsv3.RateLimitResponse_OVER_LIMIT:
		return false, ""
	}
	return false, "code " + st.GetCode().String()
}

func (c *rlsCaller) run() {
	c.t = tally{hist: newHistogram(), problems: map[string]*problem{}}
	for c.l.phase.Load() != phaseStop {
		k := c.rng.IntN(c.keys)
		start := time.Now()
		resp, err := c.do(k)
		lat := time.Since(start)
		if c.l.phase.Load() != phaseMeasure {
			continue
		}
		if err != nil {
			c.t.fail(1, "error: "+err.Error())
			continue
		}
		allowed, problem := checkRLS(resp)
		if problem != "" {
			c.t.fail(1, problem)
			continue
		}
		c.t.ok++
		if allowed {
			c.t.allowed++
		} else {
			c.t.denied++
		}
		c.t.hist.RecordValue(int64(lat))
	}
}

// rlsStopWait is how long the callers get to finish their last calls after
// the measured time before their connections are closed under them.
const rlsStopWait = 15 * time.Second

// driveRLS runs the callers over tr with nreqs prebuilt requests: warmup,
// then d measured, with marks called where that starts and ends; the
// measured wall time is returned with the merged tally.
func driveRLS(l *rlsLoad, tr rlsTransport, nreqs int, warmup, d time.Duration, marks measureMarks) (*tally, time.Duration) {
	callers := make([]*rlsCaller, l.callers)
	var wg sync.WaitGroup
	for i := range callers {
		c := &rlsCaller{l: l, do: tr.caller(i), rng: rand.New(rand.NewPCG(uint64(i)+1, 3)), keys: nreqs}
		callers[i] = c
		wg.Add(1)
		go func() { defer wg.Done(); c.run() }()
	}
	time.Sleep(warmup)
	marks.start()
	start := time.Now()
	l.phase.Store(phaseMeasure)
	time.Sleep(d)
	l.phase.Store(phaseStop)
	elapsed := time.Since(start)
	marks.end()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(rlsStopWait):
		tr.close() // a call that never got an answer
		<-done
	}
	total := &tally{hist: newHistogram(), problems: map[string]*problem{}}
	for _, c := range callers {
		total.merge(&c.t)
	}
	return total, elapsed
}
