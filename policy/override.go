package policy

import (
	"math"

	"github.com/sluice-rl/sluice/algorithms"
)

// OverrideKind says what an override gives its subject (the store reads
// the kind from the packed words: algorithms.OverrideOf).
type OverrideKind = algorithms.OverrideKind

const (
	OverrideLimit     = algorithms.OverrideLimit     // its own limit (Override.Limit)
	OverrideUnlimited = algorithms.OverrideUnlimited // always admitted, never counted
	OverrideDeny      = algorithms.OverrideDeny      // always refused
)

// Override is one subject's exception to a policy (RL.OVERRIDE SET).
// Millions of them are kept in the store's compact entries, so an Override
// packs into three pointer-free words (Pack).
type Override struct {
	Kind  OverrideKind
	Limit algorithms.Limit // OverrideLimit only; zero otherwise
	// Expire is the instant (unix ns) the override ends; 0: never.
	Expire int64
}

// MaxOverrideCount is the largest count (capacity or limit) an override's
// packed form holds: 2^47 − 1.
const MaxOverrideCount = 1<<47 - 1

// Validate checks o: a known kind; for OverrideLimit a valid limit whose
// count fits the packed form; no limit for the other kinds; Expire ≥ 0.
func (o *Override) Validate() error {
	switch o.Kind {
	case OverrideLimit:
		if err := validLimit(o.Limit); err != nil {
			return err
		}
		if o.Limit.Algo == algorithms.Concurrency {
			return errOverride("CONCURRENCY is not a limit RL.CHECK decides; an override takes TOKEN, LEAKY, FIXED, SLIDING or LOG")
		}
		if o.Limit.Count > MaxOverrideCount {
			return errOverride("the limit or capacity is above %d", int64(MaxOverrideCount))
		}
	case OverrideUnlimited, OverrideDeny:
		if o.Limit != (algorithms.Limit{}) {
			return errOverride("%s takes no limit", o.Kind)
		}
	default:
		return errOverride("unknown kind %d", o.Kind)
	}
	if o.Expire < 0 {
		return errOverride("the expiry is before 1970")
	}
	return nil
}

// Pack returns o as three words (algorithms/override.go reads them back
// for the decisions):
//
//	w[0] = the expiry (unix ns), math.MaxInt64 for an override that never
//	       expires: the store entry's Expire
//	w[1] = kind | algo<<8 | count<<16 (count < 2^47, so w[1] > 0): the
//	       entry's first state word
//	w[2] = period (ns); 0 for UNLIMITED and DENY, so trailing-zero
//	       trimming keeps those to one state word
//
// A stored entry without an expiry is a header and its state words plus
// the key: 24 bytes plus the key for a limit, 16 for UNLIMITED and DENY;
// an expiry adds a word (store/override.go). Pack validates o first.
func (o *Override) Pack() (w [3]int64, err error) {
	if err := o.Validate(); err != nil {
		return w, err
	}
	w[0] = o.Expire
	if w[0] == 0 {
		w[0] = math.MaxInt64
	}
	w[1] = int64(o.Kind) | int64(o.Limit.Algo)<<8 | o.Limit.Count<<16
	w[2] = o.Limit.Period
	return w, nil
}

// UnpackOverride reverses Pack. It refuses words that Pack cannot have
// written, so a corrupt entry is reported rather than trusted.
func UnpackOverride(w [3]int64) (Override, error) {
	if w[0] < 0 || w[1] < 0 {
		return Override{}, errCorrupt("override words out of range")
	}
	o := Override{
		Kind:   OverrideKind(w[1] & 0xff),
		Expire: w[0],
	}
	if w[0] == math.MaxInt64 {
		o.Expire = 0
	} else if w[0] == 0 {
		return Override{}, errCorrupt("override expires at 0")
	}
	if o.Kind == OverrideLimit {
		o.Limit = algorithms.Limit{Algo: algorithms.Algo(w[1] >> 8 & 0xff), Count: w[1] >> 16, Period: w[2]}
	} else if w[1]>>8 != 0 || w[2] != 0 {
		return Override{}, errCorrupt("%s override carries a limit", o.Kind)
	}
	if err := o.Validate(); err != nil {
		return Override{}, errCorrupt("%v", err)
	}
	return o, nil
}

// Live reports whether o is in force at now (unix ns).
func (o *Override) Live(now int64) bool { return o.Expire == 0 || now < o.Expire }
