package policy

import (
	"github.com/sluice-rl/sluice/algorithms"
)

// Policy is a named limit that callers use by name (RL.CHECK policy
// subject). A Policy value is immutable once a Registry holds it: the
// Registry hands out pointers that readers share without a lock.
type Policy struct {
	Name        string
	Limit       algorithms.Limit // Token … Concurrency, as the RL.* command of that algorithm takes it
	Shadow      bool             // decide and count as usual, but always admit
	Description string
	// File is the rules file that defines the policy; empty for a policy
	// defined by a command (RL.POLICY SET). A file's policies are
	// read-only through commands.
	File string
}

// FromFile reports whether the rules file owns p.
func (p *Policy) FromFile() bool { return p.File != "" }

// MaxNameLen and MaxDescriptionLen bound a policy's name and description.
const (
	MaxNameLen        = 128
	MaxDescriptionLen = 1024
)

// ValidName reports whether name matches [A-Za-z0-9_.:-]{1,128}, the
// syntax of policy names. It does not allocate.
func ValidName(name []byte) bool {
	if len(name) == 0 || len(name) > MaxNameLen {
		return false
	}
	for _, c := range name {
		if !nameByte(c) {
			return false
		}
	}
	return true
}

func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '.' || c == ':' || c == '-'
}

// CheckName returns nil for a valid name, else the error a command replies.
func CheckName(name string) error {
	if !ValidName([]byte(name)) {
		return errInvalidName(name)
	}
	return nil
}

// Validate checks p's name, limit and description.
func (p *Policy) Validate() error {
	if err := CheckName(p.Name); err != nil {
		return err
	}
	if err := validLimit(p.Limit); err != nil {
		return err
	}
	if len(p.Description) > MaxDescriptionLen {
		return errLimit("the description is longer than %d bytes", MaxDescriptionLen)
	}
	return nil
}

// Mode is how RL.CHECK decides for one subject: the named reply's "mode".
type Mode uint8

const (
	ModeEnforce   Mode = iota // decide with the limit
	ModeShadow                // decide and count, but always admit
	ModeUnlimited             // admit without deciding or counting
	ModeDeny                  // refuse without deciding
)

func (m Mode) String() string {
	switch m {
	case ModeShadow:
		return "shadow"
	case ModeUnlimited:
		return "unlimited"
	case ModeDeny:
		return "deny"
	}
	return "enforce"
}

// Resolve returns what RL.CHECK decides with for a subject of p: the
// override's limit if o is given and has one, else p's; and the mode. An
// UNLIMITED or DENY override wins over everything; a shadow policy makes
// its subjects' limits (overridden or not) shadow. It does not allocate.
func (p *Policy) Resolve(o *Override) (algorithms.Limit, Mode) {
	mode := ModeEnforce
	if p.Shadow {
		mode = ModeShadow
	}
	if o == nil {
		return p.Limit, mode
	}
	switch o.Kind {
	case OverrideUnlimited:
		return p.Limit, ModeUnlimited
	case OverrideDeny:
		return p.Limit, ModeDeny
	}
	return o.Limit, mode
}

// Reply turns a decision under mode into the result a caller sees, and
// whether it would have been denied had the policy not been shadow:
//
//   - ModeEnforce: r as it is.
//   - ModeShadow: r, admitted; wouldDeny reports r's denial. RetryAfter
//     of an admitted-by-shadow call is 0.
//   - ModeUnlimited: admitted, limit and remaining the limit's count, no
//     retry, no reset (r is not read: nothing was decided).
//   - ModeDeny: denied, remaining 0, RetryAfter algorithms.NeverNS (r is
//     not read).
func Reply(mode Mode, limit algorithms.Limit, r algorithms.Result) (out algorithms.Result, wouldDeny bool) {
	switch mode {
	case ModeShadow:
		if !r.Allowed {
			r.Allowed, r.RetryAfter = true, 0
			return r, true
		}
		return r, false
	case ModeUnlimited:
		return algorithms.Result{Allowed: true, Limit: limit.Count, Remaining: limit.Count}, false
	case ModeDeny:
		return algorithms.Result{Allowed: false, Limit: limit.Count, RetryAfter: algorithms.NeverNS}, false
	}
	return r, false
}
