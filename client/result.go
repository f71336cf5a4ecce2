package client

import "time"

// Never is Result.RetryAfter of a request that can never be admitted: its cost is above the
// limit, or a DENY override refuses the subject.
const Never time.Duration = -1

// Mode is how the server decided a policy check (the named reply's "mode").
type Mode string

const (
	ModeEnforce   Mode = "enforce"   // decided and enforced
	ModeShadow    Mode = "shadow"    // decided and counted, always admitted (WouldDeny tells)
	ModeUnlimited Mode = "unlimited" // an UNLIMITED override: admitted, not counted
	ModeDeny      Mode = "deny"      // a DENY override: refused, RetryAfter is Never
)

// Result is one decision.
//
// Allowed, Limit, Remaining, RetryAfter and ResetAfter are in every reply. A policy check sets
// Policy to the policy's name; Mode, Quota, Window and WouldDeny come only with named replies
// (NamedReplies), and are zero otherwise.
type Result struct {
	Allowed bool
	// Limit is the capacity: tokens in a full bucket, units per window, holders at once.
	Limit int64
	// Remaining is what is left after this call (rounded down).
	Remaining int64
	// RetryAfter, when denied, is how long until the same request would be admitted if nothing
	// else arrives (never early), or Never. When admitted it is 0, except for a leaky bucket,
	// where it is how long the caller must wait before acting.
	RetryAfter time.Duration
	// ResetAfter is how long until the key is back to its initial state.
	ResetAfter time.Duration
	Policy     string
	Mode       Mode
	// Quota and Window are the policy's limit in the form of the IETF RateLimit-Policy field
	// (q and w): Quota units per Window.
	Quota  int64
	Window time.Duration
	// WouldDeny reports that a shadow policy admitted a request that it would have denied.
	WouldDeny bool
}

// Never reports whether the request can never be admitted (RetryAfter is Never): waiting for it
// is pointless.
func (r Result) Never() bool { return !r.Allowed && r.RetryAfter < 0 }

// AllResult is the decision on several limits at once (Client.All, Client.CheckAll).
type AllResult struct {
	// Allowed reports whether every limit admitted; then each was charged, else none was.
	Allowed bool
	// Denied is the index of the first limit that denied, -1 when admitted.
	Denied int
	// Results holds one result per limit, in order. When denied, a limit that would have
	// admitted shows its state as it stands, nothing taken.
	Results []Result
}

// DeniedResult returns the result of the first limit that denied, and false when admitted.
func (a *AllResult) DeniedResult() (Result, bool) {
	if a.Allowed || a.Denied < 0 || a.Denied >= len(a.Results) {
		return Result{}, false
	}
	return a.Results[a.Denied], true
}

// Code is RL.MATCH's answer, numbered as the Envoy rate limit service numbers it.
type Code uint8

const (
	CodeUnknown   Code = 0
	CodeOK        Code = 1
	CodeOverLimit Code = 2
)

func (c Code) String() string {
	switch c {
	case CodeOK:
		return "OK"
	case CodeOverLimit:
		return "OVER_LIMIT"
	}
	return "UNKNOWN"
}

// Entry is one key and value of a descriptor.
type Entry struct{ Key, Value string }

// Descriptor is a list of entries, matched against a domain's rules by RL.MATCH.
type Descriptor []Entry

// MatchResult is RL.MATCH's answer: an overall code and one status per descriptor.
type MatchResult struct {
	Code     Code
	Statuses []DescriptorStatus
}

// DescriptorStatus is the answer for one descriptor.
type DescriptorStatus struct {
	Code       Code
	Limit      int64
	Remaining  int64
	ResetAfter time.Duration
}

// Info is a key's limiter state, as RL.INFO reports it (for debugging and dashboards).
// Algorithm is "" when the key holds no state. Fields that the algorithm does not keep are zero.
type Info struct {
	Algorithm string // the TYPE name: rl-token, rl-fixed, …
	ExpireAt  time.Time
	TTL       time.Duration
	// TAT is a bucket's theoretical arrival time: when it is full again (token, cl-throttle) or
	// its queue is empty (leaky).
	TAT time.Time
	// WindowStart, Count, Current and Previous are a window's state.
	WindowStart time.Time
	Count       int64
	Current     int64
	Previous    int64
	// Capacity and Entries are a log's ring size and its admitted units, oldest first.
	Capacity int64
	Entries  []time.Time
	// Leases are a concurrency limit's holders.
	Leases []LeaseState
}

// Exists reports whether the key holds state.
func (i Info) Exists() bool { return i.Algorithm != "" }

// LeaseState is one holder of a concurrency limit: its id's 64-bit hash and its lease's end.
type LeaseState struct {
	IDHash int64
	End    time.Time
}
