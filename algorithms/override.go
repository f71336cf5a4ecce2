package algorithms

// An override is one subject's exception to a named policy (RL.OVERRIDE):
// its own limit, always admitted (unlimited) or always refused (deny). A
// keyspace keeps it as an entry of kind Override whose three state words
// are:
//
//	w[0] = the expiry (unix ns), math.MaxInt64 for an override that never
//	       expires (it equals the entry's Expire)
//	w[1] = kind | algo<<8 | count<<16 (count < 2^47, so w[1] > 0)
//	w[2] = period (ns); 0 for unlimited and deny
//
// policy.Override packs and validates them; this file only reads them, for
// the keyspace that decides with them.

// OverrideKind says what an override gives its subject. The values are
// stored: they never change.
type OverrideKind uint8

const (
	OverrideNone      OverrideKind = iota // no override decided
	OverrideLimit                         // its own limit
	OverrideUnlimited                     // always admitted, never counted
	OverrideDeny                          // always refused
)

func (k OverrideKind) String() string {
	switch k {
	case OverrideNone:
		return "none"
	case OverrideLimit:
		return "limit"
	case OverrideUnlimited:
		return "unlimited"
	case OverrideDeny:
		return "deny"
	}
	return "unknown"
}

// OverrideOf reads the kind and, for OverrideLimit, the limit of an
// override entry's state words. Words that no valid override has give
// OverrideNone: the keyspace then decides with the request's own limit.
func OverrideOf(w [3]int64) (OverrideKind, Limit) {
	if w[1] <= 0 {
		return OverrideNone, Limit{}
	}
	k := OverrideKind(w[1] & 0xff)
	switch k {
	case OverrideLimit:
		l := Limit{Algo: Algo(w[1] >> 8 & 0xff), Count: w[1] >> 16, Period: w[2]}
		switch l.Algo {
		case Token, Leaky, Fixed, Sliding, Log:
		default:
			return OverrideNone, Limit{}
		}
		if l.Count < 1 || l.Period < 1 {
			return OverrideNone, Limit{}
		}
		return k, l
	case OverrideUnlimited, OverrideDeny:
		return k, Limit{}
	}
	return OverrideNone, Limit{}
}

// Unlimited is the result of a request that a subject's unlimited override
// admits: admitted without counting, with the request's limit (the
// policy's) remaining whole.
func Unlimited(l Limit) Result {
	return Result{Allowed: true, Override: OverrideUnlimited, Limit: l.Count, Remaining: l.Count}
}

// Denied is the result of a request that a subject's deny override
// refuses: nothing remaining and never admitted (RetryAfter NeverNS).
func Denied(l Limit) Result {
	return Result{Override: OverrideDeny, Limit: l.Count, RetryAfter: NeverNS}
}
