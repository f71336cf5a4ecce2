package acl

import (
	"strings"

	"github.com/sluice-rl/sluice/glob"
)

// Perms is a user's permissions compiled for checking commands: a bitmap
// indexed by command id, and the key patterns as bytes. The default user's
// (allcommands allkeys) answers with one branch.
//
// A Perms never changes; a user whose rules change gets a new one (see
// User.Perms). Its methods are safe for concurrent use, read no clock and
// allocate nothing.
type Perms struct {
	fast      bool // allcommands and allkeys: everything is allowed
	allCmds   bool
	allKeys   bool
	future    bool
	bits      []uint64
	firstArgs map[int][]string
	keys      []compiledPattern
}

type compiledPattern struct {
	pattern []byte
	access  Access
}

// compile turns a state into its Perms.
func compile(s *state) *Perms {
	p := &Perms{allCmds: s.cmds.all, allKeys: s.allKeys, future: s.cmds.future,
		bits: append([]uint64(nil), s.cmds.bits...), firstArgs: s.cmds.clone().firstArgs}
	p.fast = p.allCmds && p.allKeys
	for _, k := range s.keys {
		p.keys = append(p.keys, compiledPattern{pattern: []byte(k.pattern), access: k.access})
	}
	return p
}

// denyAll is the Perms of a deleted user: no command but the NoAuth ones,
// and no key.
var denyAll = &Perms{}

// Reason says why a command was denied, and is ACL LOG's reason.
type Reason uint8

const (
	Allowed       Reason = iota
	DeniedCommand        // the user may not run the command
	DeniedKey            // nor touch one of its keys
	DeniedChannel        // (sluice has no channels; kept for ACL LOG's vocabulary)
	DeniedAuth           // a failed AUTH or HELLO … AUTH
)

// String is the reason as ACL LOG prints it.
func (r Reason) String() string {
	switch r {
	case DeniedCommand:
		return "command"
	case DeniedKey:
		return "key"
	case DeniedChannel:
		return "channel"
	case DeniedAuth:
		return "auth"
	}
	return "unknown"
}

// Denial is a check's verdict: Reason is Allowed, or why not; for
// DeniedKey, Pos is the index in argv of the key denied.
type Denial struct {
	Reason Reason
	Pos    int
}

// Check reports whether the user may run c with these arguments (argv[0]
// is the command's name; for a subcommand argv[1] is its name): the
// command's bit (or an allowed first argument), then every key its
// KeySpecs (or its Locate) locate. Keys the registry cannot locate are the caller's to
// check with CheckKey.
func (p *Perms) Check(c *Command, argv [][]byte) Denial {
	if p.fast {
		return Denial{}
	}
	if !p.allCmds && !c.noAuth && !p.bit(c.ID) && !p.firstArgAllowed(c, argv) {
		return Denial{Reason: DeniedCommand}
	}
	if p.allKeys {
		return Denial{}
	}
	if c.locate != nil {
		var buf [8]KeyRef
		for _, k := range c.locate(argv, buf[:0]) {
			if !p.keyAllowed(argv[k.Pos], k.Access) {
				return Denial{Reason: DeniedKey, Pos: k.Pos}
			}
		}
		return Denial{}
	}
	for _, ks := range c.keys {
		last := ks.Last
		if last < 0 {
			last += len(argv)
		}
		step := max(ks.Step, 1)
		for i := ks.First; i > 0 && i <= last && i < len(argv); i += step {
			if !p.keyAllowed(argv[i], ks.Access) {
				return Denial{Reason: DeniedKey, Pos: i}
			}
		}
	}
	return Denial{}
}

// CheckKey reports whether the user may touch key with this access.
func (p *Perms) CheckKey(key []byte, access Access) bool {
	return p.allKeys || p.keyAllowed(key, access)
}

// CheckKeyPrefix reports whether the user may touch, with this access,
// every key that begins with prefix: it has allkeys, or a pattern that
// grants the access ends with a `*` (glob.EndsWithStar) and matches
// prefix, and so matches every longer key too. It answers for a key of
// which only the start is known (RL.TOP's truncated keys).
func (p *Perms) CheckKeyPrefix(prefix []byte, access Access) bool {
	if p.allKeys {
		return true
	}
	for i := range p.keys {
		k := &p.keys[i]
		if k.access&access != access || !glob.EndsWithStar(k.pattern) {
			continue
		}
		if m, decided, _ := glob.Match(k.pattern, prefix, false, glob.MaxStars, glob.StepLimit); m && decided {
			return true
		}
	}
	return false
}

// AllowsAll reports whether every command and key is allowed (allcommands
// allkeys, as the default user): the caller can skip Check.
func (p *Perms) AllowsAll() bool { return p.fast }

// AllowsAllKeys reports whether every key is allowed (the caller can skip
// collecting keys for CheckKey).
func (p *Perms) AllowsAllKeys() bool { return p.allKeys }

func (p *Perms) bit(id int) bool {
	w := id >> 6
	if w >= len(p.bits) {
		return p.future
	}
	return p.bits[w]&(1<<(id&63)) != 0
}

func (p *Perms) firstArgAllowed(c *Command, argv [][]byte) bool {
	args := p.firstArgs[c.ID]
	idx := 1
	if c.Parent != nil {
		idx = 2
	}
	if len(args) == 0 || len(argv) <= idx {
		return false
	}
	for _, a := range args {
		if strings.EqualFold(a, string(argv[idx])) {
			return true
		}
	}
	return false
}

// keyAllowed matches key against the patterns that grant access: Redis's
// glob semantics, in time linear in the key (glob.Match). A pattern that
// cannot decide within glob.StepLimit steps does not match.
func (p *Perms) keyAllowed(key []byte, access Access) bool {
	for i := range p.keys {
		k := &p.keys[i]
		if k.access&access != access {
			continue
		}
		if m, decided, _ := glob.Match(k.pattern, key, false, glob.MaxStars, glob.StepLimit); m && decided {
			return true
		}
	}
	return false
}

// Message is the Denial in ACL DRYRUN's words ("OK" when allowed); cmd is
// the command's full name, argv its arguments as checked.
func (d Denial) Message(cmd string, argv [][]byte) string {
	switch d.Reason {
	case DeniedCommand:
		return "This user has no permissions to run the '" + cmd + "' command"
	case DeniedKey:
		return "This user has no permissions to access the '" + string(argv[d.Pos]) + "' key"
	case DeniedChannel:
		return "This user has no permissions to access the '" + string(argv[d.Pos]) + "' channel"
	}
	return "OK"
}

// Error is the NOPERM error a denied command gets, in Redis 7.0's words
// (its own code: the edge adds no ERR).
func (d Denial) Error(cmd string) string {
	switch d.Reason {
	case DeniedCommand:
		return "NOPERM this user has no permissions to run the '" + cmd + "' command"
	case DeniedKey:
		return "NOPERM this user has no permissions to access one of the keys used as arguments"
	case DeniedChannel:
		return "NOPERM this user has no permissions to access one of the channels used as arguments"
	}
	return ""
}
