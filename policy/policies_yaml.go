package policy

import (
	"strings"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/internal/parse"
	"gopkg.in/yaml.v3"
)

// The policies section of a rules file (a sluice extension; a file that has
// one is not an envoyproxy/ratelimit file). Each entry mirrors
// RL.POLICY SET:
//
//	policies:
//	  - name: free              # [A-Za-z0-9_.:-]{1,128}
//	    algorithm: token        # token, leaky, fixed, sliding, log, concurrency
//	    rate: 10/s              # token, leaky: N/unit, N/duration or N (per second)
//	    capacity: 20            # token, leaky
//	    limit: 100              # fixed, sliding, log, concurrency
//	    window: 1m              # fixed, sliding, log
//	    lease: 30s              # concurrency
//	    shadow: true            # optional
//	    description: free tier  # optional
//
// Rates and durations are read as the RL.* commands read them
// (internal/parse): N a positive decimal (10/s, 0.5), durations a positive
// integer and one of the units ms, s, m, h, d.

// policyKeys are the keys a policy entry may have.
var policyKeys = map[string]bool{
	"name": true, "algorithm": true, "rate": true, "capacity": true, "limit": true,
	"window": true, "lease": true, "shadow": true, "description": true,
}

// policies reads the policies list.
func (r *reader) policies(v *yaml.Node) []*policySpec {
	if empty(v) {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		r.fault(v, msgNotList, "policies")
		return nil
	}
	var out []*policySpec
	for _, e := range v.Content {
		e = r.deref(e)
		if e.Kind != yaml.MappingNode {
			r.fault(e, msgNotMapping, "a policy")
			continue
		}
		if ps := r.policy(e); ps != nil {
			out = append(out, ps)
		}
	}
	return out
}

func (r *reader) policy(m *yaml.Node) *policySpec {
	ps := &policySpec{at: posOf(m)}
	vals := map[string]*yaml.Node{}
	for _, p := range r.pairs(m) {
		if !policyKeys[p.key] {
			r.fault(p.kn, msgUnknownKey+" (a policy takes name, algorithm, rate, capacity, limit, window, lease, shadow, description)", p.key)
			continue
		}
		vals[p.key] = r.deref(p.value)
	}
	before := len(r.faults)
	p := &ps.p
	if v := vals["name"]; v != nil {
		p.Name = r.str(v, "name")
	}
	if p.Name == "" {
		r.fault(m, "a policy needs a name")
		return nil
	}
	if v := vals["description"]; v != nil {
		p.Description = r.str(v, "description")
	}
	if v := vals["shadow"]; v != nil {
		p.Shadow = r.boolean(v, "shadow")
	}
	av := vals["algorithm"]
	if av == nil {
		r.fault(m, "policy '%s' needs an algorithm", quoteName(p.Name))
		return nil
	}
	algo, ok := ParseAlgo(r.str(av, "algorithm"))
	if !ok {
		r.fault(av, "algorithm must be token, leaky, fixed, sliding, log or concurrency, not '%s'", render(av))
		return nil
	}
	p.Limit.Algo = algo
	// The two parameters each algorithm takes, and the keys it may not have.
	var countKey, periodKey string
	switch algo {
	case algorithms.Token, algorithms.Leaky:
		countKey, periodKey = "capacity", "rate"
	case algorithms.Concurrency:
		countKey, periodKey = "limit", "lease"
	default:
		countKey, periodKey = "limit", "window"
	}
	for _, k := range []string{"rate", "capacity", "limit", "window", "lease"} {
		if v := vals[k]; v != nil && k != countKey && k != periodKey {
			r.fault(v, "%s does not apply to algorithm %s (it takes %s and %s)", k, AlgoName(algo), periodKey, countKey)
		}
	}
	if v := vals[countKey]; v != nil {
		p.Limit.Count = r.positive(v, countKey)
	} else {
		r.fault(m, "policy '%s' needs %s", quoteName(p.Name), countKey)
	}
	if v := vals[periodKey]; v != nil {
		text := r.str(v, periodKey)
		var err error
		if periodKey == "rate" {
			p.Limit.Period, err = parseRateText(text)
		} else {
			p.Limit.Period, err = parseDurationText(text, periodKey)
		}
		if err != nil {
			r.fault(v, "%v", err)
		}
	} else {
		r.fault(m, "policy '%s' needs %s", quoteName(p.Name), periodKey)
	}
	if len(r.faults) > before {
		return nil
	}
	return ps
}

// parseDurationText reads a window or a lease (named what in the errors) in
// the RL.* commands' grammar (parse.Duration): a positive integer followed
// by ms, s, m, h or d.
func parseDurationText(s, what string) (int64, error) {
	ns, fault := parse.Duration([]byte(s))
	if fault == parse.Malformed {
		return 0, errLimit("invalid %s '%s': use a positive integer and a unit (ms, s, m, h, d), like 60s or 1500ms", what, s)
	}
	return ns, durationErr(fault, what)
}

// durationErr words a well-formed duration's fault (nil for parse.OK).
func durationErr(f parse.Fault, what string) error {
	switch f {
	case parse.NoUnit:
		return errLimit("%s needs a unit, like 60s or 1500ms", what)
	case parse.NotPositive:
		return errLimit("%s must be positive", what)
	case parse.OutOfRange:
		return errLimit("%s is out of range", what)
	}
	return nil
}

// parseRateText reads a rate in the RL.* commands' grammar (parse.Rate):
// N/unit, N/duration or N (per second), N a positive decimal, and returns
// the interval between units in nanoseconds, rounded up so that the rate is
// never exceeded.
func parseRateText(s string) (int64, error) {
	ns, fault := parse.Rate([]byte(s))
	switch fault {
	case parse.OK:
		return ns, nil
	case parse.Malformed:
		return 0, errLimit("invalid rate '%s': use N/unit like 10/s, 100/m, N/duration like 100/90s, or N per second", s)
	case parse.MalformedPeriod:
		_, period, _ := strings.Cut(s, "/")
		return 0, errLimit("invalid rate period '%s': use a positive integer and a unit (ms, s, m, h, d), like 60s or 1500ms", period)
	case parse.ZeroRate:
		return 0, errLimit("rate must be positive")
	case parse.TooHigh:
		return 0, errLimit("rate is too high: at most 1 per nanosecond")
	case parse.TooLow:
		return 0, errLimit("rate is too low: the interval between units must be under 292 years")
	}
	return 0, durationErr(fault, "rate period")
}
