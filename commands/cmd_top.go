package commands

import (
	"math"

	"github.com/sluice-rl/sluice/acl"
	"github.com/sluice-rl/sluice/internal/parse"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/topk"
)

// RL.TOP: the keys that were decided, or denied, most often lately, from
// the heavy-hitters sketches (topkeys.go). Counts are approximate with a
// bound: each entry's true count lies between count-error and count.

func init() {
	register(&command{
		name: "rl.top", arity: -1, maxArgs: 6, flags: flagReadOnly | flagLoading, run: cmdTop,
		group: "rate-limit", since: "0.2.0", complexity: "O(S·K log K): S stripes of K counters",
		summary: "Lists the keys (and RL.CHECK's policy and subject pairs) denied, or decided, most often in " +
			"the last window, with counts and their error bounds.",
		arguments: []argDoc{
			{name: "denied", typ: "pure-token", token: "DENIED", optional: true},
			{name: "decisions", typ: "pure-token", token: "DECISIONS", optional: true},
			{name: "count", typ: "integer", token: "COUNT", optional: true},
			{name: "window", typ: "string", token: "WINDOW", optional: true},
		},
	})
}

// topRequest is RL.TOP's arguments.
type topRequest struct {
	denied bool
	count  int
	window int // index in topWindows
}

// parseTop reads [DENIED|DECISIONS] [COUNT n] [WINDOW 1m|5m|1h], in any
// order; defaults DENIED, COUNT 10, WINDOW 1m.
func parseTop(args [][]byte) (topRequest, error) {
	req := topRequest{denied: true, count: 10}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case equalFold(a, "denied"):
			req.denied = true
		case equalFold(a, "decisions"):
			req.denied = false
		case equalFold(a, "count") && i+1 < len(args):
			i++
			n, ok := parse.Int(args[i])
			if !ok {
				return req, errNotInteger
			}
			if n <= 0 {
				return req, errOutOfRangePositive
			}
			req.count = int(min(n, 1<<20))
		case equalFold(a, "window") && i+1 < len(args):
			i++
			req.window = -1
			for w, tw := range topWindows {
				if equalFold(args[i], tw.name) {
					req.window = w
				}
			}
			if req.window < 0 {
				return req, errTopWindow
			}
		default:
			return req, errSyntax
		}
	}
	return req, nil
}

// cmdTop: RL.TOP [DENIED|DECISIONS] [COUNT n] [WINDOW 1m|5m|1h]
func cmdTop(s *session, args [][]byte) {
	req, err := parseTop(args[1:])
	if err != nil {
		s.writeError(err)
		return
	}
	if s.h.top.k == 0 {
		s.writeError(errTopOff)
		return
	}
	// operation: a user limited to some keys sees the entries whose key it
	// could read, and COUNT counts those
	tally := s.h.top.top(req.denied, req.window, s.conn.Now())
	var top []topk.Entry
	if p := s.user.Perms(); p.AllowsAllKeys() {
		top = tally.Top(req.count)
	} else {
		top = readableTop(p, tally.Top(math.MaxInt), req.count)
	}
	// reply: [key, count, error, policy, subject] per key, policy and
	// subject null unless the key is RL.CHECK's
	s.writeArray(len(top))
	for i := range top {
		e := &top[i]
		s.writeArray(5)
		s.writeBulk(topKeyText(e))
		s.writeInt(int64(e.Count))
		s.writeInt(int64(e.Err))
		name, subject, ok := policy.SplitCheckKey(e.Key)
		if !ok || e.Truncated {
			s.writeNull()
			s.writeNull()
			continue
		}
		s.writeBulkString(name)
		s.writeBulk(subject)
	}
}

// readableTop keeps, in order, the first count entries of top whose key
// p may read: as a read of that key is checked (RL.CHECK's entries by
// their pol:<policy>:<algo>:<subject> key, as RL.INFO POLICY reads it),
// and a truncated key only if every key that begins with it is readable.
func readableTop(p *acl.Perms, top []topk.Entry, count int) []topk.Entry {
	out := top[:0]
	for i := range top {
		if len(out) == count {
			break
		}
		e := &top[i]
		if e.Truncated && p.CheckKeyPrefix(e.Key, acl.Read) || !e.Truncated && p.CheckKey(e.Key, acl.Read) {
			out = append(out, *e)
		}
	}
	return out
}

// topKeyText is an entry's key as RL.TOP shows it: a truncated key ends
// with "...".
func topKeyText(e *topk.Entry) []byte {
	if e.Truncated {
		return append(e.Key[:len(e.Key):len(e.Key)], "..."...)
	}
	return e.Key
}

// MaxTopKeys is the most counters a sketch may have (top-keys).
const MaxTopKeys = 4096

// TopEntry is one key of a top list, for the metrics endpoint: its rank
// (1 first), count and error bound; never its name, which has no place in
// a metric's labels.
type TopEntry struct {
	Rank       int
	Count, Err uint64
}

// TopWindows are the windows TopKeys reads.
func TopWindows() []string {
	out := make([]string, len(topWindows))
	for i, w := range topWindows {
		out[i] = w.name
	}
	return out
}

// TopKeys returns the counts of the n keys denied (or decided) most often
// over window w (an index in TopWindows) at this moment, highest first:
// nil if top keys are off. Any goroutine.
func (h *Handler) TopKeys(denied bool, w, n int) []TopEntry {
	if h.top.k == 0 {
		return nil
	}
	top := h.top.top(denied, w, h.clock.Now()).Top(n)
	out := make([]TopEntry, len(top))
	for i, e := range top {
		out[i] = TopEntry{Rank: i + 1, Count: e.Count, Err: e.Err}
	}
	return out
}
