package commands

import (
	"sync"

	"github.com/sluice-rl/sluice/acl"
)

// command is one entry of the registration table.
type command struct {
	name    string // lower case, as Redis names commands in errors and COMMAND
	arity   int    // Redis's convention: n means exactly n arguments, -n at least n
	maxArgs int    // most arguments, counting the name; 0 means no maximum
	flags   cmdFlags
	class   deferClass // how its work runs (set by register, from flags)
	run     func(s *session, args [][]byte)
	acl     *acl.Command // the ACL's handle (acl_wiring.go), set before the first Handler serves

	// What COMMAND and COMMAND DOCS report.
	group      string
	since      string
	summary    string
	complexity string
	arguments  []argDoc
	subs       []string // subcommand names, for COMMAND's tenth field

	// keySpecs locate its keys (keyspecs.go); getKeys, when set, finds them
	// instead, for specs marked keyIncomplete or keyVariableFlags (Redis's
	// getkeys_proc): it appends to out and returns it, false if args do not
	// fit.
	keySpecs []keySpec
	getKeys  func(args [][]byte, out []keyRef) ([]keyRef, bool)

	// categories are its ACL categories besides the ones its flags and
	// group imply (aclCategories); subCategories replace a subcommand's
	// (then @fast or @slow as the command), where they differ from the
	// command's.
	categories    []string
	subCategories map[string][]string

	// COMMAND INFO's first key, last key and step, derived from keySpecs
	// by register (legacyKeys).
	firstKey, lastKey, keyStep int

	idx int // its index in statList (the same as in commandList), for per-command figures

	// subStats are the entries its subcommands' figures count under, in
	// the order of subs (statCommands makes them).
	subStats []*command
}

type cmdFlags uint16

const (
	flagDecision cmdFlags = 1 << iota // deferred: carried out with the batch's other decisions
	flagNoAuth                        // allowed before AUTH
	flagWrite
	flagReadOnly
	flagFast
	flagAdmin
	flagLoading
	flagForward         // deferred: a follower's forwarded submission, carried out with the others (RAFT.FORWARD)
	flagNoMandatoryKeys // its keys may be none (EVAL with numkeys 0)
	flagMovableKeys     // set by register: no fixed range locates its keys (legacyKeys)
)

// argDoc describes one argument for COMMAND DOCS, in the form redis-cli
// reads to show hints.
type argDoc struct {
	name     string
	typ      string // key, string, integer, pattern, pure-token
	token    string
	optional bool
	multiple bool
}

func (cmd *command) arityOK(n int) bool {
	if cmd.arity >= 0 {
		return n == cmd.arity
	}
	return n >= -cmd.arity && (cmd.maxArgs == 0 || n <= cmd.maxArgs)
}

// commandTable is the one registration table: every command the server
// knows, by lower-case name. Families register from their own files.
var commandTable = map[string]*command{}

// commandList holds the same commands in registration order.
var commandList []*command

func register(cmds ...*command) {
	for _, cmd := range cmds {
		if commandTable[cmd.name] != nil {
			panic("commands: " + cmd.name + " registered twice")
		}
		switch {
		case cmd.flags&flagDecision != 0:
			cmd.class = classDecision
		case cmd.flags&flagForward != 0:
			cmd.class = classForward
		}
		var movable bool
		cmd.firstKey, cmd.lastKey, cmd.keyStep, movable = legacyKeys(cmd.keySpecs)
		if movable {
			cmd.flags |= flagMovableKeys
		}
		commandTable[cmd.name] = cmd
		cmd.idx = len(commandList)
		commandList = append(commandList, cmd)
	}
}

// statList is commandList followed by one entry per subcommand of the
// commands that have them, named as Redis 7's commandstats names them
// ("client|info"): the entries per-command figures count under, an
// entry's idx being its index here. statCommands makes it.
var (
	statList []*command
	statOnce sync.Once
)

// statCommands returns statList, making it at the first call: when the
// first Handler is made, after every family has registered.
func statCommands() []*command {
	statOnce.Do(func() {
		statList = append([]*command(nil), commandList...)
		for _, cmd := range commandList {
			for _, sub := range cmd.subs {
				sc := &command{name: cmd.name + "|" + sub, flags: cmd.flags, class: cmd.class, group: cmd.group,
					idx: len(statList)}
				cmd.subStats = append(cmd.subStats, sc)
				statList = append(statList, sc)
			}
		}
	})
	return statList
}

// statFor returns the entry cmd's figures for args count under: its
// subcommand's if args name one, else its own.
func (cmd *command) statFor(args [][]byte) *command {
	if cmd.subStats == nil || len(args) < 2 {
		return cmd
	}
	for i, sub := range cmd.subs {
		if equalFold(args[1], sub) {
			return cmd.subStats[i]
		}
	}
	return cmd
}

// lookupCommand finds a command by name, in any letter case, without
// allocating.
func lookupCommand(name []byte) *command { return lookupIn(commandTable, name) }

// lookupIn finds a command by name in table, in any letter case, without
// allocating.
func lookupIn(table map[string]*command, name []byte) *command {
	var buf [24]byte
	if len(name) > len(buf) {
		return nil
	}
	lower := buf[:len(name)]
	for i, b := range name {
		if b >= 'A' && b <= 'Z' {
			b += 'a' - 'A'
		}
		lower[i] = b
	}
	return table[string(lower)]
}

// equalFold reports whether b equals the lower-case ASCII word s in any
// letter case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
