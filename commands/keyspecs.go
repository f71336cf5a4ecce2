package commands

import (
	"github.com/sluice-rl/sluice/acl"
	"github.com/sluice-rl/sluice/internal/parse"
)

// Key specifications, in Redis 7's form: each command's registration says
// where its keys are and how it uses them, and everything that needs its
// keys reads them from there (commandKeys): the ACL's key checks, COMMAND
// INFO, COMMAND GETKEYS and GETKEYSANDFLAGS, and the cluster router
// (CommandKeys).

// keySpec is one key specification (COMMAND INFO's ninth field). The
// search begins at argument index, or after the argument keyword found
// from startFrom (negative: from the end, backwards); from there the keys
// are a range (lastKey relative to the first key, or negative from the
// end; every keyStep-th; limit > 1 keeps 1/limit of what -1 reaches) or,
// with keyNum, the count at keyNumIdx after the beginning and that many
// keys from firstKey after it, every keyStep-th.
type keySpec struct {
	flags keyFlags
	notes string

	index     int
	keyword   string
	startFrom int

	keyNum              bool
	lastKey, keyStep    int
	limit               int
	keyNumIdx, firstKey int
}

// keyFlags say how a command uses a spec's keys, as Redis's key-spec flags
// do: one of RO, RW, OW, RM, then what it does to the value.
type keyFlags uint16

const (
	keyRO            keyFlags = 1 << iota // reads the value
	keyRW                                 // reads and changes it
	keyOW                                 // overwrites it
	keyRM                                 // deletes the key
	keyAccess                             // returns, copies or uses the value
	keyUpdate                             // changes the value in place or adds to it
	keyInsert                             // adds a value that did not exist
	keyDelete                             // removes a value
	keyNotKey                             // not a key: a name routed as one (skipped by the ACL and GETKEYS)
	keyIncomplete                         // the spec may miss keys: the command's getKeys finds them
	keyVariableFlags                      // the flags depend on other arguments
	// keyDerived is sluice's: the argument routes as a key (its slot is the
	// slot of the state), but the state sits under a key the command derives
	// from it (RL.CHECK's pol:<policy>:<algo>:<subject>), and the command
	// checks that key against the ACL itself. Not shown by COMMAND.
	keyDerived
)

var keyFlagNames = []struct {
	flag keyFlags
	name string
}{
	{keyRO, "RO"}, {keyRW, "RW"}, {keyOW, "OW"}, {keyRM, "RM"}, {keyAccess, "access"}, {keyUpdate, "update"},
	{keyInsert, "insert"}, {keyDelete, "delete"}, {keyNotKey, "not_key"}, {keyIncomplete, "incomplete"},
	{keyVariableFlags, "variable_flags"},
}

// keyRange is the spec of the keys from argument index to lastKey (relative
// to index; -1: the last argument), every keyStep-th.
func keyRange(flags keyFlags, index, lastKey, keyStep int) keySpec {
	return keySpec{flags: flags, index: index, lastKey: lastKey, keyStep: keyStep}
}

// keyCount is the spec of EVAL's keys: the count at argument index, the
// keys after it.
func keyCount(flags keyFlags, index, keyNumIdx, firstKey, keyStep int) keySpec {
	return keySpec{flags: flags, index: index, keyNum: true, keyNumIdx: keyNumIdx, firstKey: firstKey, keyStep: keyStep}
}

// keyRef is a key commandKeys found: args[pos], used as flags say.
type keyRef struct {
	pos   int
	flags keyFlags
}

// commandKeys appends to out the keys of cmd called with args (args[0] is
// its name) and returns it, with ok false if the arguments do not fit its
// specs (as Redis's getKeysFromCommandWithSpecs, a command's getKeys
// answers for specs marked incomplete). A command without keys, or whose
// arguments do not fit, has none; its own parsing gives the error.
func commandKeys(cmd *command, args [][]byte, out []keyRef) ([]keyRef, bool) {
	if cmd.getKeys != nil {
		return cmd.getKeys(args, out)
	}
	start := len(out)
	for i := range cmd.keySpecs {
		var ok bool
		if out, ok = cmd.keySpecs[i].find(args, out); !ok {
			return out[:start], false
		}
	}
	return out, true
}

// find appends the keys ks locates in args, as Redis's
// getKeysUsingKeySpecs: false if a count or a bound falls outside args.
func (ks *keySpec) find(args [][]byte, out []keyRef) ([]keyRef, bool) {
	if ks.flags&keyNotKey != 0 {
		return out, true
	}
	argc := len(args)
	first := ks.index
	if ks.keyword != "" {
		first = 0
		from, to, step := ks.startFrom, argc-1, 1
		if ks.startFrom < 0 {
			from, to, step = argc+ks.startFrom, 1, -1
		}
		for i := from; i >= 1 && i < argc; i += step {
			if equalFold(args[i], ks.keyword) {
				first = i + 1
				break
			}
			if i == to {
				break
			}
		}
		if first == 0 {
			return out, true // no keyword, no keys
		}
	}
	var last, step int
	if ks.keyNum {
		step = ks.keyStep
		if first+ks.keyNumIdx >= argc {
			return out, false
		}
		n, ok := parse.Int(args[first+ks.keyNumIdx])
		if !ok || n < 0 || n > int64(argc) {
			return out, false
		}
		first += ks.firstKey
		last = first + int(n) - 1
	} else {
		step = ks.keyStep
		switch {
		case ks.lastKey >= 0:
			last = first + ks.lastKey
		case ks.limit <= 1:
			last = argc + ks.lastKey
		default:
			last = first + ((argc-first)/ks.limit + ks.lastKey)
		}
	}
	if last >= argc || last < first || first >= argc {
		return out, false
	}
	for i := first; i <= last; i += max(step, 1) {
		out = append(out, keyRef{pos: i, flags: ks.flags})
	}
	if ks.flags&keyIncomplete != 0 {
		return out, false
	}
	return out, true
}

// aclAccess is what the ACL checks for a key used with flags, as Redis's
// ACLSelectorCheckKey: access reads it, update, insert and delete write
// it; a key with neither (EXISTS, TYPE) passes any key pattern.
func aclAccess(flags keyFlags) acl.Access {
	var a acl.Access
	if flags&keyAccess != 0 {
		a |= acl.Read
	}
	if flags&(keyUpdate|keyInsert|keyDelete) != 0 {
		a |= acl.Write
	}
	return a
}

// aclRanges are the ACL's Spec.Keys for cmd when its specs are plain
// ranges of keys it names (the ACL checks them without allocating); nil
// when aclLocate must find them.
func aclRanges(cmd *command) []acl.KeySpec {
	if cmd.getKeys != nil {
		return nil
	}
	var out []acl.KeySpec
	for _, ks := range cmd.keySpecs {
		if ks.keyword != "" || ks.keyNum || ks.limit > 1 || ks.flags&(keyDerived|keyNotKey|keyIncomplete) != 0 {
			return nil
		}
		last := ks.lastKey
		if last >= 0 {
			last += ks.index
		}
		out = append(out, acl.KeySpec{First: ks.index, Last: last, Step: ks.keyStep, Access: aclAccess(ks.flags)})
	}
	return out
}

// derivesKeys reports whether cmd keeps its state under keys it derives
// from its arguments (keyDerived), which it checks against the ACL itself.
func derivesKeys(cmd *command) bool {
	for _, ks := range cmd.keySpecs {
		if ks.flags&keyDerived != 0 {
			return true
		}
	}
	return false
}

// aclLocate is the ACL's Spec.Locate for cmd: its keys, without the ones
// it derives its state keys from (the command checks those itself); nil
// when it has no keys or aclRanges locates them.
func aclLocate(cmd *command) func(argv [][]byte, buf []acl.KeyRef) []acl.KeyRef {
	if len(cmd.keySpecs) == 0 || aclRanges(cmd) != nil {
		return nil
	}
	return func(argv [][]byte, buf []acl.KeyRef) []acl.KeyRef {
		var refs [8]keyRef
		keys, _ := commandKeys(cmd, argv, refs[:0])
		for _, k := range keys {
			if k.flags&keyDerived == 0 {
				buf = append(buf, acl.KeyRef{Pos: k.pos, Access: aclAccess(k.flags)})
			}
		}
		return buf
	}
}

// legacyKeys derives COMMAND INFO's first key, last key and step from the
// specs, and whether the command has movable keys, as Redis's
// populateCommandLegacyRangeSpec: one index-and-range spec is the range;
// otherwise the consecutive plain ranges make it, and any other spec, or
// an incomplete one, makes the keys movable.
func legacyKeys(specs []keySpec) (first, last, step int, movable bool) {
	if len(specs) == 0 {
		return 0, 0, 0, false
	}
	plain := func(ks *keySpec) bool { return ks.keyword == "" && !ks.keyNum }
	lastOf := func(ks *keySpec) int {
		if ks.lastKey >= 0 {
			return ks.index + ks.lastKey
		}
		return ks.lastKey
	}
	if len(specs) == 1 && plain(&specs[0]) {
		ks := &specs[0]
		return ks.index, lastOf(ks), ks.keyStep, ks.flags&keyIncomplete != 0
	}
	first = -1
	prevLast := 0
	for i := range specs {
		ks := &specs[i]
		if !plain(ks) || ks.keyStep != 1 || prevLast != 0 && prevLast != ks.index-1 {
			movable = true
			continue
		}
		if ks.flags&keyIncomplete != 0 {
			movable = true
		}
		if first < 0 || ks.index < first {
			first = ks.index
		}
		if l := lastOf(ks); uint(l) > uint(last) { // unsigned: a negative last key is the largest
			last = l
		}
		prevLast = last
	}
	if first < 0 {
		return 0, 0, 0, true
	}
	return first, last, 1, movable
}

// CommandKeys returns the keys of the command args calls (args[0] is its
// name, in any letter case) as the cluster router hashes them: every key
// its registration's specs locate, including the subjects RL.CHECK derives
// its state keys from. known is false for an unknown command; a command
// without keys, or whose arguments do not fit its specs, has none.
func CommandKeys(args [][]byte) (keys [][]byte, known bool) {
	if len(args) == 0 {
		return nil, false
	}
	cmd := lookupCommand(args[0])
	if cmd == nil {
		return nil, false
	}
	var buf [8]keyRef
	refs, _ := commandKeys(cmd, args, buf[:0])
	for _, k := range refs {
		keys = append(keys, args[k.pos])
	}
	return keys, true
}
