package commands

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"github.com/sluice-rl/sluice/acl"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/policy"
)

// RL.OVERRIDE: one subject's exception to a named policy — its own limit,
// UNLIMITED or DENY — which RL.CHECK decides with instead of the policy's
// limit. An override is an entry of the key space (kind rl-override) under
// ovr:<policy>:<subject> (policy.AppendOverrideKey): 16 to 32 bytes plus
// the key, so millions fit; it expires, snapshots, logs and replicates as
// every entry does, and SCAN, TYPE, DEL and the ACL key patterns see it.

func init() {
	register(&command{
		name: "rl.override", arity: -2, run: cmdOverride, group: "rate-limit", since: "0.1.0",
		summary: "Gives one subject of a policy its own limit, UNLIMITED or DENY (SET), reads (GET), " +
			"deletes (DEL) and lists (LIST) the overrides that RL.CHECK decides with.",
		complexity: "O(1) for SET, GET and DEL; LIST visits about COUNT keys of the key space per call",
		subs:       []string{"set", "get", "del", "list", "help"},
		flags:      flagWrite | flagNoMandatoryKeys,
		// SET, GET and DEL route by the subject (the override lives in the
		// subject's slot, policy.SplitCheckKey); its key is derived and
		// checked against the ACL by the subcommand.
		keySpecs:   []keySpec{keyRange(keyRW|keyUpdate|keyIncomplete, 3, 0, 1)},
		getKeys:    overrideKeys,
		categories: []string{"policy"},
	})
}

// overrideKeys is RL.OVERRIDE's getKeys: the subject of SET, GET and DEL.
func overrideKeys(args [][]byte, out []keyRef) ([]keyRef, bool) {
	if len(args) < 4 {
		return out, len(args) >= 2 && (equalFold(args[1], "list") || equalFold(args[1], "help"))
	}
	switch {
	case equalFold(args[1], "set"):
		return append(out, keyRef{pos: 3, flags: keyOW | keyUpdate | keyDerived}), true
	case equalFold(args[1], "get"):
		return append(out, keyRef{pos: 3, flags: keyRO | keyAccess | keyDerived}), true
	case equalFold(args[1], "del"):
		return append(out, keyRef{pos: 3, flags: keyRM | keyDelete | keyDerived}), true
	}
	return out, equalFold(args[1], "list")
}

var overrideHelp = []string{
	"RL.OVERRIDE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"SET <policy> <subject> (<TOKEN|LEAKY|FIXED|SLIDING|LOG> <p1> <p2> | UNLIMITED | DENY) [EXPIRE <duration>]",
	"    Give a subject its own limit, always admit it (UNLIMITED) or always refuse it (DENY).",
	"GET <policy> <subject>",
	"    Return a subject's override, or nil.",
	"DEL <policy> <subject>",
	"    Delete a subject's override; 1 if it existed.",
	"LIST <policy> [<cursor>] [COUNT <count>]",
	"    Iterate over a policy's overrides, as SCAN iterates over keys.",
	"HELP",
	"    Print this help.",
}

// cmdOverride: RL.OVERRIDE SET|GET|DEL|LIST|HELP …
func cmdOverride(s *session, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	n := len(args)
	switch {
	case sub == "set" && n >= 5:
		s.overrideSet(args[2], args[3], args[4:])
	case sub == "get" && n == 4:
		s.overrideGet(args[2], args[3])
	case sub == "del" && n == 4:
		s.overrideDel(args[2], args[3])
	case sub == "list" && n >= 3 && n <= 6:
		s.overrideList(args[2], args[3:])
	case sub == "help" && n == 2:
		s.writeArray(len(overrideHelp))
		for _, line := range overrideHelp {
			s.writeSimple(line)
		}
	case sub == "set" || sub == "get" || sub == "del" || sub == "list" || sub == "help":
		s.writeError(errWrongArgs("rl.override|" + sub))
	default:
		s.writeError(errUnknownSubcommand(args[1], "RL.OVERRIDE"))
	}
}

// overrideKey returns the override key of subject under the policy named
// name, or the error that refuses it: an invalid name, an empty subject,
// or a key the session's user may not reach with access.
func (s *session) overrideKey(name, subject []byte, access acl.Access) ([]byte, error) {
	if err := policy.CheckName(string(name)); err != nil {
		return nil, err
	}
	if len(subject) == 0 {
		return nil, errEmptySubject
	}
	key := policy.AppendOverrideKey(nil, string(name), subject)
	if err := s.derivedKeyError(key, access); err != nil {
		return nil, err
	}
	return key, nil
}

// overrideSet: policy subject (ALGO p1 p2 | UNLIMITED | DENY) [EXPIRE d].
// The policy must exist (a rules file's or a command's) and be one
// RL.CHECK decides.
func (s *session) overrideSet(name, subject []byte, spec [][]byte) {
	key, err := s.overrideKey(name, subject, acl.Write)
	if err != nil {
		s.writeError(err)
		return
	}
	p := s.policyNamed(name)
	if p == nil {
		s.writeError(policy.NoSuchPolicy(string(name)))
		return
	}
	if p.Limit.Algo == algorithms.Concurrency {
		s.writeError(errOverrideConcurrency)
		return
	}
	now := s.conn.Now()
	o, err := s.parseOverrideSpec(spec, now)
	if err != nil {
		s.writeError(err)
		return
	}
	w, err := o.Pack()
	if err != nil {
		s.writeError(err)
		return
	}
	if _, err := s.h.ks.SetOverride(now, key, w); err != nil {
		s.writeError(err)
		return
	}
	s.writeOK()
}

// overrideGet replies a subject's override as a map (RESP3) or field-value
// pairs (RESP2): policy, subject, mode (limit, unlimited or deny),
// algorithm (nil for UNLIMITED and DENY), count, period_ns and ttl_ms
// (-1: none); nil if the subject has none. It reads through the log on a
// replicated node, as RL.INFO does.
func (s *session) overrideGet(name, subject []byte) {
	key, err := s.overrideKey(name, subject, acl.Read)
	if err != nil {
		s.writeError(err)
		return
	}
	now := s.conn.Now()
	info, err := s.h.ks.Info(now, key)
	switch {
	case err != nil:
		s.writeError(err)
		return
	case info.Algo == algorithms.None:
		s.writeNull()
		return
	case info.Algo != algorithms.Override:
		s.writeError(errWrongTypeOverride)
		return
	}
	o := policy.Override{Expire: info.Expire}
	if o.Expire == math.MaxInt64 {
		o.Expire = 0
	}
	for _, f := range info.Fields { // store/info.go's fields of an override
		switch f.Name {
		case "kind":
			o.Kind = policy.OverrideKind(f.Value)
		case "algo":
			o.Limit.Algo = algorithms.Algo(f.Value)
		case "count":
			o.Limit.Count = f.Value
		case "period_ns":
			o.Limit.Period = f.Value
		}
	}
	if err := o.Validate(); err != nil {
		s.writeError(err)
		return
	}
	s.writeOverride(name, subject, &o, now, true)
}

// writeOverride writes one override's fields: a map (RESP3) or pairs
// (RESP2) with withNames, else the bare values in an array of six:
// subject, mode, algorithm, count, period_ns, ttl_ms (RL.OVERRIDE LIST).
func (s *session) writeOverride(name, subject []byte, o *policy.Override, now int64, withNames bool) {
	ttl := int64(-1)
	if o.Expire != 0 {
		ttl = ceilMillis(max(o.Expire-now, 0))
	}
	field := func(f string) {
		if withNames {
			s.writeBulkString(f)
		}
	}
	if withNames {
		s.writeMap(7)
		field("policy")
		s.writeBulk(name)
	} else {
		s.writeArray(6)
	}
	field("subject")
	s.writeBulk(subject)
	field("mode")
	s.writeBulkString(o.Kind.String())
	field("algorithm")
	if o.Kind == policy.OverrideLimit {
		s.writeBulkString(strings.ToUpper(policy.AlgoName(o.Limit.Algo)))
	} else {
		s.writeNull()
	}
	field("count")
	s.writeInt(o.Limit.Count)
	field("period_ns")
	s.writeInt(o.Limit.Period)
	field("ttl_ms")
	s.writeInt(ttl)
}

// overrideDel deletes a subject's override: 1 if it had one, else 0. The
// policy need not exist any more: a deleted policy's overrides can still
// be removed before they expire.
func (s *session) overrideDel(name, subject []byte) {
	key, err := s.overrideKey(name, subject, acl.Write)
	if err != nil {
		s.writeError(err)
		return
	}
	now := s.conn.Now()
	switch t, err := s.h.ks.Type(now, key); {
	case err != nil:
		s.writeError(err)
		return
	case t == algorithms.None:
		s.writeInt(0)
		return
	case t != algorithms.Override:
		s.writeError(errWrongTypeOverride) // not ours to delete
		return
	}
	n, err := s.h.ks.Delete(now, [][]byte{key})
	s.replyInt(n, err)
}

// overrideList: policy [cursor] [COUNT n]. It walks the key space as SCAN
// does (the same cursor, about COUNT keys visited per call, at most
// scanMaxBytes of subjects) and replies [next cursor, [[subject, mode,
// algorithm, count, period_ns, ttl_ms] …]] for the policy's overrides among
// them. A replicated node lists its own replica.
func (s *session) overrideList(name []byte, args [][]byte) {
	if err := policy.CheckName(string(name)); err != nil {
		s.writeError(err)
		return
	}
	var cursor uint64
	if len(args) == 1 || len(args) == 3 {
		c, err := strconv.ParseUint(string(args[0]), 10, 64)
		if err != nil {
			s.writeError(errInvalidCursor)
			return
		}
		cursor, args = c, args[1:]
	}
	count := 10
	if len(args) != 0 {
		if len(args) != 2 || !equalFold(args[0], "count") {
			s.writeError(errSyntax)
			return
		}
		var err error
		if count, err = parseScanCount(args[1]); err != nil {
			s.writeError(err)
			return
		}
	}
	prefix := policy.AppendOverrideKey(nil, string(name), nil)
	if err := s.derivedKeyError(policy.AppendOverridePattern(nil, string(name)), acl.Read); err != nil {
		s.writeError(err)
		return
	}
	now := s.conn.Now()
	var found []byte // the keys found, one after the other
	var ends []int
	offered := 0
	next, err := s.h.ks.Scan(now, cursor, count, func(key []byte, algo algorithms.Algo) bool {
		if offered++; offered > 1 && len(found)+len(key) > scanMaxBytes {
			return false // for the next call
		}
		if algo == algorithms.Override && bytes.HasPrefix(key, prefix) {
			found = append(found, key...)
			ends = append(ends, len(found))
		}
		return true
	})
	if err != nil {
		s.writeError(err)
		return
	}
	type item struct {
		subject []byte
		o       policy.Override
	}
	items := make([]item, 0, len(ends))
	from := 0
	for _, end := range ends {
		key := found[from:end]
		from = end
		w, ok := s.h.ks.LocalOverride(now, key)
		if !ok {
			continue // deleted or expired since the walk
		}
		o, err := policy.UnpackOverride(w)
		if err != nil {
			continue
		}
		items = append(items, item{key[len(prefix):], o})
	}
	s.writeArray(2)
	s.writeBulkString(strconv.FormatUint(next, 10))
	s.writeArray(len(items))
	for i := range items {
		s.writeOverride(name, items[i].subject, &items[i].o, now, false)
	}
}
