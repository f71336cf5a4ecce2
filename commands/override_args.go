package commands

import (
	"math"
	"strings"

	"github.com/sluice-rl/sluice/policy"
)

// RL.OVERRIDE SET's argument grammar, after "policy subject":
//
//	(ALGO p1 p2 | UNLIMITED | DENY) [EXPIRE duration]
//
// ALGO and its parameters are those of RL.POLICY SET (the RL.* command of
// that algorithm); EXPIRE takes a duration with a unit (500ms, 30s, 1h, 7d)
// counted from now. The command checks the policy's name and existence; this
// file only turns the words into a validated policy.Override.

// parseOverrideSpec reads an override's words at now (unix ns). It does not
// allocate beyond what parseLimit does and reads no clock: the caller passes
// the instant EXPIRE counts from.
func (s *session) parseOverrideSpec(args [][]byte, now int64) (policy.Override, error) {
	var o policy.Override
	if len(args) == 0 {
		return o, errSyntax
	}
	rest := args[1:]
	switch strings.ToUpper(string(args[0])) {
	case "UNLIMITED":
		o.Kind = policy.OverrideUnlimited
	case "DENY":
		o.Kind = policy.OverrideDeny
	default:
		if len(args) < 3 {
			return o, errSyntax
		}
		l, err := s.parseNamedLimit(args[0], args[1], args[2])
		if err != nil {
			return o, err
		}
		o.Kind, o.Limit = policy.OverrideLimit, l
		rest = args[3:]
	}
	if len(rest) != 0 {
		if len(rest) != 2 || !strings.EqualFold(string(rest[0]), "EXPIRE") {
			return o, errSyntax
		}
		d, err := parseDuration(rest[1], "expire")
		if err != nil {
			return o, err
		}
		if now < 0 || d > math.MaxInt64-1-now {
			return o, errOverrideExpire
		}
		o.Expire = now + d
	}
	if err := o.Validate(); err != nil {
		return o, err
	}
	return o, nil
}
