package policy

import (
	"github.com/sluice-rl/sluice/algorithms"
)

// The derived keys. Policies and rules keep their state in the ordinary key
// space under keys derived from their names, readable so that SCAN, RL.INFO
// and ACL key patterns work on them:
//
//	RL.CHECK policy subject:  pol:<policy>:<algo>:<subject>
//	an override's entry:      ovr:<policy>:<subject>
//	a rule matched by RL.MATCH or RLS:
//	                          rls:<domain>:<algo>{:<key>=<value>}
//
// <algo> is AlgoName of the limit that decides (token, leaky, fixed,
// sliding, log, concurrency): changing a policy's or a rule's algorithm
// starts its subjects afresh instead of meeting state of another kind
// (WRONGTYPE), and the old state expires by itself. The policy's name is in
// its keys, so two policies never share state.
//
// Every component but the last of a pol: or ovr: key is escaped: the bytes
// % : = * ? [ ] \ , space, control bytes (< 0x20) and DEL become %XX
// (upper-case hex). The subject, last, is written as it is. In an rls: key
// every component is escaped, one <key>=<value> pair per entry of the
// request's descriptor, in order (a share_threshold entry writes the rule's
// wildcard pattern instead of the value, so its values share a counter).
// A key therefore splits unambiguously at its colons, and an escaped
// component never holds a glob character: "pol:free:token:*" or
// "rls:api:*" are exact ACL and SCAN patterns for a policy's or a domain's
// keys (a policy name may hold ':', written %3A).
//
// A domain with slot_by: <key> (a sharded cluster's --grpc-batch call)
// writes its first entry of that key as a hash tag, ":{<key>=<value>}",
// and escapes '{' and '}' in every other component as %7B and %7D: the
// tag is then the key's first '{…}', never empty, so that every key of a
// descriptor with the same <key>=<value> entry lies in the slot of
// "<key>=<value>" (CLUSTER KEYSLOT). Domains without slot_by keep their
// keys as they were.
const (
	prefixCheck    = "pol:"
	prefixOverride = "ovr:"
	prefixRule     = "rls:"
)

// AppendCheckKey appends the state key of subject under the policy named
// name, decided with algorithm algo (Policy.Resolve's limit), to dst.
func AppendCheckKey(dst []byte, name string, algo algorithms.Algo, subject []byte) []byte {
	dst = append(dst, prefixCheck...)
	dst = appendEscaped(dst, name)
	dst = append(dst, ':')
	dst = append(dst, AlgoName(algo)...)
	dst = append(dst, ':')
	return append(dst, subject...)
}

// AppendCheckKeys appends the state key of subject under the policy
// named name (AppendCheckKey) and then subject's override key
// (AppendOverrideKey) to dst, escaping the name once. It returns dst and
// the offset in it where the override key starts.
func AppendCheckKeys(dst []byte, name string, algo algorithms.Algo, subject []byte) ([]byte, int) {
	dst = append(dst, prefixCheck...)
	from := len(dst)
	dst = appendEscaped(dst, name)
	to := len(dst)
	dst = append(dst, ':')
	dst = append(dst, AlgoName(algo)...)
	dst = append(dst, ':')
	dst = append(dst, subject...)
	split := len(dst)
	dst = append(dst, prefixOverride...)
	dst = append(dst, dst[from:to]...)
	dst = append(dst, ':')
	return append(dst, subject...), split
}

// AppendOverrideKey appends the key of subject's override of the policy
// named name to dst. All of a policy's overrides match the glob
// "ovr:<escaped name>:*".
func AppendOverrideKey(dst []byte, name string, subject []byte) []byte {
	dst = append(dst, prefixOverride...)
	dst = appendEscaped(dst, name)
	dst = append(dst, ':')
	return append(dst, subject...)
}

// AppendOverridePattern appends the glob that matches every override key
// of the policy named name.
func AppendOverridePattern(dst []byte, name string) []byte {
	dst = append(dst, prefixOverride...)
	dst = appendEscaped(dst, name)
	return append(dst, ':', '*')
}

// ruleKey writes the keys of one domain's rules: slotBy is its slot_by
// ("" without), tagged whether the key being written has its tag.
type ruleKey struct {
	slotBy string
	tagged bool
}

// head appends "rls:<domain>:<algo>" to dst and starts a key.
func (k *ruleKey) head(dst, domain []byte, algo algorithms.Algo) []byte {
	k.tagged = false
	dst = append(dst, prefixRule...)
	dst = appendComponent(dst, domain, k.slotBy != "")
	dst = append(dst, ':')
	return append(dst, AlgoName(algo)...)
}

// appendRuleEntry appends ":<key>=<value>" to dst, or ":{<key>=<value>}"
// for k's first entry of its slotBy.
func appendRuleEntry[S ~string | ~[]byte](k *ruleKey, dst, key []byte, value S) []byte {
	dst = append(dst, ':')
	tag := !k.tagged && k.slotBy != "" && string(key) == k.slotBy
	if tag {
		k.tagged = true
		dst = append(dst, '{')
	}
	braces := k.slotBy != ""
	dst = appendComponent(dst, key, braces)
	dst = append(dst, '=')
	dst = appendComponent(dst, value, braces)
	if tag {
		dst = append(dst, '}')
	}
	return dst
}

// appendComponent appends s escaped, and with braces '{' and '}' escaped
// too (slot_by).
func appendComponent[S ~string | ~[]byte](dst []byte, s S, braces bool) []byte {
	if !braces {
		return appendEscaped(dst, s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if escapeSet[c] || c == '{' || c == '}' {
			dst = append(dst, '%', hexDigits[c>>4], hexDigits[c&15])
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

// escapeSet marks the bytes a key component writes as %XX.
var escapeSet = func() (t [256]bool) {
	for c := 0; c <= ' '; c++ {
		t[c] = true
	}
	for _, c := range []byte("%:=*?[]\\\x7f") {
		t[c] = true
	}
	return t
}()

const hexDigits = "0123456789ABCDEF"

// appendEscaped appends s with escapeSet's bytes written as %XX.
func appendEscaped[S ~string | ~[]byte](dst []byte, s S) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if escapeSet[c] {
			dst = append(dst, '%', hexDigits[c>>4], hexDigits[c&15])
			continue
		}
		dst = append(dst, c)
	}
	return dst
}
