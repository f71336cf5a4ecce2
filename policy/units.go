package policy

import (
	"math"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
)

// Unit is a rate limit's unit of time as Envoy's RLS v3 API numbers it
// (envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit): the values
// are the protocol's, so a gRPC adapter converts with a plain cast.
type Unit uint8

const (
	UnitUnknown Unit = 0
	UnitSecond  Unit = 1
	UnitMinute  Unit = 2
	UnitHour    Unit = 3
	UnitDay     Unit = 4
	UnitMonth   Unit = 5 // 30 days, as envoyproxy/ratelimit counts it
	UnitYear    Unit = 6 // 365 days
	UnitWeek    Unit = 7 // 7 days; added to the protocol after MONTH and YEAR
)

var unitNames = [...]string{"unknown", "second", "minute", "hour", "day", "month", "year", "week"}

var unitSeconds = [...]int64{0, 1, 60, 3600, 86400, 30 * 86400, 365 * 86400, 7 * 86400}

// String returns the unit's name in lower case, as rules files write it.
func (u Unit) String() string {
	if int(u) < len(unitNames) {
		return unitNames[u]
	}
	return "unknown"
}

// Seconds returns the unit's length in seconds, 0 for UnitUnknown.
func (u Unit) Seconds() int64 {
	if int(u) < len(unitSeconds) {
		return unitSeconds[u]
	}
	return 0
}

// Nanos returns the unit's length in nanoseconds, 0 for UnitUnknown.
func (u Unit) Nanos() int64 { return u.Seconds() * int64(time.Second) }

// ParseUnit reads a unit name case-insensitively ("second", "MINUTE", …),
// as envoyproxy/ratelimit reads rules files. "unknown" is not a unit.
func ParseUnit(b []byte) (Unit, bool) {
	if len(b) > 8 {
		return UnitUnknown, false
	}
	var low [8]byte
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		low[i] = c
	}
	for u := UnitSecond; int(u) < len(unitNames); u++ {
		if string(low[:len(b)]) == unitNames[u] {
			return u, true
		}
	}
	return UnitUnknown, false
}

// EnvoyLimit is a limit as Envoy writes it: RequestsPerUnit requests per
// Unit. It is what an RLS reply reports as current_limit, and the form of a
// per-descriptor limit override in an RLS request. RequestsPerUnit 0 is a
// valid limit that refuses every request that adds a hit.
type EnvoyLimit struct {
	RequestsPerUnit uint32
	Unit            Unit
}

// Valid reports whether l names a known unit.
func (l EnvoyLimit) Valid() bool { return l.Unit != UnitUnknown && l.Unit.Seconds() > 0 }

// Limit returns the exact limit that carries out l with algorithm algo:
//
//	Fixed, Sliding, Log: Count = RequestsPerUnit, Period = the unit;
//	Token, Leaky:        Period = unit / RequestsPerUnit (rounded up, so it
//	                     never admits faster than asked), Count = burst, or
//	                     RequestsPerUnit when burst is 0.
//
// It refuses RequestsPerUnit 0 (that limit refuses everything and needs no
// state; see FlagDeny), unknown units, other algorithms, a negative burst
// and rates above one per nanosecond.
func (l EnvoyLimit) Limit(algo algorithms.Algo, burst int64) (algorithms.Limit, error) {
	if !l.Valid() {
		return algorithms.Limit{}, errLimit("unknown unit")
	}
	if l.RequestsPerUnit == 0 {
		return algorithms.Limit{}, errLimit("requests_per_unit 0 admits nothing")
	}
	if burst < 0 {
		return algorithms.Limit{}, errLimit("burst must be positive")
	}
	unit := l.Unit.Nanos()
	rpu := int64(l.RequestsPerUnit)
	switch algo {
	case algorithms.Fixed, algorithms.Sliding, algorithms.Log:
		if burst != 0 {
			return algorithms.Limit{}, errLimit("burst applies to the token and leaky algorithms only")
		}
		return algorithms.Limit{Algo: algo, Count: rpu, Period: unit}, nil
	case algorithms.Token, algorithms.Leaky:
		if rpu > unit {
			return algorithms.Limit{}, errLimit("rate is too high: at most 1 per nanosecond")
		}
		if burst == 0 {
			burst = rpu
		}
		interval := unit / rpu
		if unit%rpu != 0 {
			interval++
		}
		if !algorithms.RefillFits(burst, interval) {
			return algorithms.Limit{}, errLimit("burst times the interval is too long (over 146 years)")
		}
		return algorithms.Limit{Algo: algo, Count: burst, Period: interval}, nil
	}
	return algorithms.Limit{}, errLimit("algorithm %s cannot carry out a requests_per_unit rule", AlgoName(algo))
}

// AlgoName returns the algorithm's name as policies, rules files and state
// keys write it: token, leaky, fixed, sliding, log, concurrency (and
// throttle, none).
func AlgoName(a algorithms.Algo) string {
	switch a {
	case algorithms.Token:
		return "token"
	case algorithms.Leaky:
		return "leaky"
	case algorithms.Fixed:
		return "fixed"
	case algorithms.Sliding:
		return "sliding"
	case algorithms.Log:
		return "log"
	case algorithms.Concurrency:
		return "concurrency"
	case algorithms.Throttle:
		return "throttle"
	}
	return "none"
}

// ParseAlgo reads a policy's algorithm case-insensitively: TOKEN, LEAKY,
// FIXED, SLIDING, LOG or CONCURRENCY.
func ParseAlgo(s string) (algorithms.Algo, bool) {
	for a := algorithms.Token; a <= algorithms.Concurrency; a++ {
		if strings.EqualFold(s, AlgoName(a)) {
			return a, true
		}
	}
	return algorithms.None, false
}

// Quota describes l the way the IETF RateLimit-Policy field does: a quota
// of units per window (nanoseconds). For the windows it is the limit and
// the window; for a token or leaky bucket the capacity and the time a
// drained bucket takes to refill (capacity × interval, saturated); for a
// concurrency limit the holders and the lease.
func Quota(l algorithms.Limit) (quota, window int64) {
	switch l.Algo {
	case algorithms.Token, algorithms.Leaky, algorithms.Throttle:
		if l.Period > 0 && l.Count > math.MaxInt64/l.Period {
			return l.Count, math.MaxInt64
		}
		return l.Count, l.Count * l.Period
	}
	return l.Count, l.Period
}

// validLimit checks a policy's or an override's exact limit: an algorithm a
// policy may name, and Count, Period ≥ 1.
func validLimit(l algorithms.Limit) error {
	if l.Algo < algorithms.Token || l.Algo > algorithms.Concurrency {
		return errLimit("unknown algorithm %d", l.Algo)
	}
	if l.Count < 1 {
		return errLimit("the limit or capacity must be positive")
	}
	if l.Period < 1 {
		return errLimit("the rate, window or lease must be positive")
	}
	if (l.Algo == algorithms.Token || l.Algo == algorithms.Leaky) && !algorithms.RefillFits(l.Count, l.Period) {
		return errLimit("capacity times the interval is too long (over 146 years)")
	}
	return nil
}
