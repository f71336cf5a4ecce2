package policy

import (
	"math"
	"strconv"
	"strings"

	"github.com/sluice-rl/sluice/algorithms"
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
// N is a positive integer; durations are a positive integer and one of the
// units ms, s, m, h, d, as the RL.* commands take them.

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

// durationUnits are the units of a duration, in nanoseconds.
var durationUnits = map[string]int64{"ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9, "d": 86400e9}

// parseDurationText reads a positive integer followed by ms, s, m, h or d.
func parseDurationText(s, what string) (int64, error) {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	digits, unit := s[:i], s[i:]
	if digits == "" || digits[0] == '0' && len(digits) > 1 {
		return 0, errLimit("invalid %s '%s': use a positive integer and a unit (ms, s, m, h, d), like 60s or 1500ms", what, s)
	}
	if unit == "" {
		return 0, errLimit("%s needs a unit, like 60s or 1500ms", what)
	}
	per, ok := durationUnits[unit]
	if !ok {
		return 0, errLimit("invalid %s '%s': use a positive integer and a unit (ms, s, m, h, d), like 60s or 1500ms", what, s)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > math.MaxInt64/per {
		return 0, errLimit("%s is out of range", what)
	}
	if n == 0 {
		return 0, errLimit("%s must be positive", what)
	}
	return n * per, nil
}

// parseRateText reads N/unit, N/duration or N (per second), N a positive
// integer, and returns the interval between units in nanoseconds, rounded
// up so that the rate is never exceeded.
func parseRateText(s string) (int64, error) {
	count, period := s, ""
	if i := strings.IndexByte(s, '/'); i >= 0 {
		count, period = s[:i], s[i+1:]
	}
	n, err := strconv.ParseInt(count, 10, 64)
	if err != nil || count == "" || count[0] < '0' || count[0] > '9' || len(count) > 1 && count[0] == '0' {
		return 0, errLimit("invalid rate '%s': use N/unit like 10/s, 100/m, N/duration like 100/90s, or N per second", s)
	}
	if n == 0 {
		return 0, errLimit("rate must be positive")
	}
	periodNs := int64(1e9)
	if period != "" {
		if ns, ok := durationUnits[period]; ok {
			periodNs = ns
		} else if periodNs, err = parseDurationText(period, "rate period"); err != nil {
			return 0, err
		}
	} else if strings.Contains(s, "/") {
		return 0, errLimit("invalid rate '%s': use N/unit like 10/s, 100/m, N/duration like 100/90s, or N per second", s)
	}
	if n > periodNs {
		return 0, errLimit("rate is too high: at most 1 per nanosecond")
	}
	interval := periodNs / n
	if periodNs%n != 0 {
		interval++
	}
	return interval, nil
}
