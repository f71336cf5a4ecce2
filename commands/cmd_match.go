package commands

import (
	"sync"

	"github.com/sluice-rl/sluice/acl"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/internal/parse"
	"github.com/sluice-rl/sluice/policy"
)

// RL.MATCH: the rules files' Envoy-style domains applied to a request's
// descriptors, as envoyproxy/ratelimit's ShouldRateLimit applies them. It
// is a thin adapter over policy's engine, the same one the RLS v3 gRPC
// front end (rls/) calls: policy.RuleSet.Plan resolves each descriptor to
// an item, the items that decide go to the key space in one Decide call
// (one Raft entry in a replicated group), and policy.Compose makes the
// answer. Each descriptor is decided on its own, as Envoy's service and
// rls's default batching do: one over its limit does not stop the others
// from counting.

func init() {
	register(&command{
		name: "rl.match", arity: -5, flags: flagWrite, run: cmdMatch,
		categories: []string{"limiter", "policy"}, // decisions under the rules files' domains
		group:      "rate-limit", since: "0.1.0", complexity: "O(N) in the descriptors' entries",
		summary: "Applies a rules file's domain to a request's descriptors as Envoy's rate limit service does, " +
			"taking HITS units (default 1; 0 checks without counting), and replies the overall code and one " +
			"status per descriptor.",
		arguments: []argDoc{
			{name: "domain", typ: "string"},
			{name: "hits", typ: "integer", token: "HITS", optional: true},
			{name: "descriptor", typ: "string", token: "DESCRIPTOR", multiple: true},
		},
	})
}

// matchState is one RL.MATCH call's scratch, pooled so that a call
// allocates nothing once the pool holds grown ones.
type matchState struct {
	plan    policy.Plan
	ds      []policy.Descriptor
	entries []policy.Entry
	reqs    []algorithms.Request
	idx     []int
	outs    []algorithms.Outcome
	all     []algorithms.Outcome
	resp    policy.Response
}

var matchPool = sync.Pool{New: func() any { return new(matchState) }}

// parseMatch reads RL.MATCH's arguments after the domain into m.ds: an
// optional HITS n, then one or more DESCRIPTOR k v [k v …]. The entries
// point into args.
func parseMatch(m *matchState, args [][]byte) (hits int64, err error) {
	hits = 1
	i := 0
	if i < len(args) && equalFold(args[i], "hits") {
		if i+1 >= len(args) {
			return 0, errSyntax
		}
		n, ok := parse.Int(args[i+1])
		if !ok || n < 0 {
			return 0, errMatchHits
		}
		hits, i = n, i+2
	}
	m.entries, m.ds = m.entries[:0], m.ds[:0]
	var starts []int // start of each descriptor's entries in m.entries
	for i < len(args) {
		if !equalFold(args[i], "descriptor") {
			return 0, errSyntax
		}
		i++
		start := len(m.entries)
		for i+1 < len(args) && !equalFold(args[i], "descriptor") {
			m.entries = append(m.entries, policy.Entry{Key: args[i], Value: args[i+1]})
			i += 2
		}
		if len(m.entries) == start || (i < len(args) && !equalFold(args[i], "descriptor")) {
			return 0, errMatchDescriptor // no pair, or a key without its value
		}
		starts = append(starts, start)
	}
	if len(starts) == 0 {
		return 0, errMatchDescriptor
	}
	for k, start := range starts {
		end := len(m.entries)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		m.ds = append(m.ds, policy.Descriptor{Entries: m.entries[start:end:end]})
	}
	return hits, nil
}

// cmdMatch: RL.MATCH domain [HITS n] DESCRIPTOR k v [k v …] [DESCRIPTOR …]
func cmdMatch(s *session, args [][]byte) {
	s.runDeferred() // the decisions queued before it answer first
	m := matchPool.Get().(*matchState)
	defer matchPool.Put(m)
	hits, err := parseMatch(m, args[2:])
	if err != nil {
		s.writeError(err)
		return
	}
	if err := s.h.cfg.Policies.Rules().Plan(&m.plan, args[1], hits, m.ds); err != nil {
		s.writeError(replyError(err.Error()))
		return
	}
	items := m.plan.Items
	m.reqs, m.idx = m.reqs[:0], m.idx[:0]
	for i := range items {
		if it := &items[i]; it.Decides() {
			if err := s.derivedKeyError(it.Key, acl.Read|acl.Write); err != nil {
				s.writeError(err)
				return
			}
			m.reqs = append(m.reqs, it.Request())
			m.idx = append(m.idx, i)
		}
	}
	m.outs = resize(m.outs, len(m.reqs))
	m.all = resize(m.all, len(items))
	clear(m.all)
	now := s.conn.Now()
	if len(m.reqs) > 0 {
		s.h.ks.Decide(now, m.reqs, m.outs)
	}
	for k, i := range m.idx {
		m.all[i] = m.outs[k]
	}
	if err := policy.Compose(&m.resp, items, m.all, now); err != nil {
		s.writeError(err)
		return
	}
	s.writeMatch(&m.resp)
}

// writeMatch writes RL.MATCH's reply: [code, [[code, limit, remaining,
// reset_after_ms, retry_after_ms] …]] with Envoy's code numbers (1 OK,
// 2 OVER_LIMIT), the same in RESP2 and RESP3; with CLIENT NAMED-REPLY ON,
// {code, statuses: [{code, limit, remaining, reset_after_ms,
// retry_after_ms, name} …]} with the codes by name. limit is the rule's
// requests_per_unit (0 without a limit), remaining is limit_remaining
// (4294967295 for an unlimited rule), retry_after_ms is -1 when the
// descriptor can never be admitted and 0 when it was.
func (s *session) writeMatch(r *policy.Response) {
	if !s.named {
		s.writeArray(2)
		s.writeInt(int64(r.Code))
		s.writeArray(len(r.Statuses))
		for i := range r.Statuses {
			st := &r.Statuses[i]
			s.writeArray(5)
			s.writeInt(int64(st.Code))
			s.writeInt(int64(st.Current.RequestsPerUnit))
			s.writeInt(st.Remaining)
			s.writeInt(ceilMillis(st.ResetAfter))
			s.writeInt(matchRetry(st))
		}
		return
	}
	s.writeMap(2)
	s.writeBulkString("code")
	s.writeBulkString(r.Code.String())
	s.writeBulkString("statuses")
	s.writeArray(len(r.Statuses))
	for i := range r.Statuses {
		st := &r.Statuses[i]
		s.writeMap(6)
		s.writeBulkString("code")
		s.writeBulkString(st.Code.String())
		s.writeBulkString("limit")
		s.writeInt(int64(st.Current.RequestsPerUnit))
		s.writeBulkString("remaining")
		s.writeInt(st.Remaining)
		s.writeBulkString("reset_after_ms")
		s.writeInt(ceilMillis(st.ResetAfter))
		s.writeBulkString("retry_after_ms")
		s.writeInt(matchRetry(st))
		s.writeBulkString("name")
		s.writeBulkString(st.Name)
	}
}

// matchRetry is a status's retry_after_ms: 0 if it was admitted (or is a
// shadow descriptor reported OK), -1 if it can never be, else its wait
// rounded up.
func matchRetry(st *policy.Status) int64 {
	switch {
	case st.Code == policy.CodeOK:
		return 0
	case st.RetryAfter == algorithms.NeverNS || st.RetryAfter < 0:
		return -1
	}
	return ceilMillis(st.RetryAfter)
}

// resize returns x with length n, reusing its array when it is large
// enough.
func resize[T any](x []T, n int) []T {
	if cap(x) < n {
		return make([]T, n)
	}
	return x[:n]
}
