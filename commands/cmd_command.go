package commands

import (
	"slices"
	"sort"
	"strings"

	"github.com/sluice-rl/sluice/acl"
)

// COMMAND, COMMAND COUNT, COMMAND INFO, COMMAND LIST and COMMAND DOCS, in
// the shapes redis-cli and client libraries read.

func init() {
	register(&command{name: "command", arity: -1, flags: flagLoading, run: cmdCommand, categories: []string{"dangerous"}, group: "server", since: "0.1.0",
		summary:    "Describes the commands: COMMAND, COMMAND COUNT, COMMAND INFO, COMMAND LIST, COMMAND DOCS, COMMAND GETKEYS.",
		complexity: "O(N)", subs: []string{"count", "info", "list", "docs", "getkeys", "getkeysandflags", "help"}})
}

func sortedCommands() []*command {
	list := make([]*command, 0, len(commandTable))
	for _, cmd := range commandTable {
		list = append(list, cmd)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].name < list[j].name })
	return list
}

// commandsNamed returns the commands args name (nil for unknown names), or
// all of them when args is empty.
func commandsNamed(args [][]byte) []*command {
	if len(args) == 0 {
		return sortedCommands()
	}
	out := make([]*command, len(args))
	for i, a := range args {
		out[i] = lookupCommand(a)
	}
	return out
}

func cmdCommand(s *session, args [][]byte) {
	if len(args) == 1 {
		list := sortedCommands()
		s.writeArray(len(list))
		for _, cmd := range list {
			s.writeCommandInfo(cmd)
		}
		return
	}
	sub := args[1]
	switch {
	case equalFold(sub, "count") && len(args) == 2:
		s.writeInt(int64(len(commandTable)))
	case equalFold(sub, "list") && len(args) == 2:
		list := sortedCommands()
		s.writeArray(len(list))
		for _, cmd := range list {
			s.writeBulkString(cmd.name)
		}
	case equalFold(sub, "info"):
		list := commandsNamed(args[2:])
		s.writeArray(len(list))
		for _, cmd := range list {
			if cmd == nil {
				s.writeNull()
				continue
			}
			s.writeCommandInfo(cmd)
		}
	case equalFold(sub, "docs"):
		var list []*command
		for _, cmd := range commandsNamed(args[2:]) {
			if cmd != nil {
				list = append(list, cmd)
			}
		}
		s.writeMap(len(list))
		for _, cmd := range list {
			s.writeBulkString(cmd.name)
			s.writeCommandDocs(cmd)
		}
	case equalFold(sub, "getkeys") || equalFold(sub, "getkeysandflags"):
		s.commandGetKeys(args, equalFold(sub, "getkeysandflags"))
	case equalFold(sub, "help") && len(args) == 2:
		help := []string{
			"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"(no subcommand)", "    Return details about all commands.",
			"COUNT", "    Return the total number of commands.",
			"LIST", "    Return a list of all commands.",
			"INFO [<command-name> ...]", "    Return details about the named commands, or all of them.",
			"DOCS [<command-name> ...]", "    Return documentation about the named commands, or all of them.",
			"GETKEYS <full-command>", "    Return the keys from a full Redis command.",
			"GETKEYSANDFLAGS <full-command>", "    Return the keys and the access flags from a full Redis command.",
			"HELP", "    Print this help.",
		}
		s.writeArray(len(help))
		for _, l := range help {
			s.writeSimple(l)
		}
	default:
		s.writeError(errUnknownSubcommand(sub, "COMMAND"))
	}
}

var flagNames = []struct {
	flag cmdFlags
	name string
}{
	{flagWrite, "write"}, {flagReadOnly, "readonly"}, {flagAdmin, "admin"}, {flagNoAuth, "no_auth"},
	{flagLoading, "loading"}, {flagFast, "fast"}, {flagNoMandatoryKeys, "no_mandatory_keys"},
	{flagMovableKeys, "movablekeys"},
}

// commandGetKeys answers COMMAND GETKEYS and GETKEYSANDFLAGS with the keys
// commandKeys finds, in Redis's replies and words.
func (s *session) commandGetKeys(args [][]byte, withFlags bool) {
	name := "command|getkeys"
	if withFlags {
		name = "command|getkeysandflags"
	}
	if len(args) < 4 {
		s.writeError(errWrongArgs(name))
		return
	}
	argv := args[2:]
	cmd := s.h.lookupCommand(argv[0])
	switch {
	case cmd == nil:
		s.writeError(errGetKeysNoCommand)
		return
	case len(cmd.keySpecs) == 0 && cmd.getKeys == nil:
		s.writeError(errGetKeysNoKeys)
		return
	case cmd.arity > 0 && cmd.arity != len(argv) || len(argv) < -cmd.arity:
		s.writeError(errGetKeysArity)
		return
	}
	var buf [8]keyRef
	keys, _ := commandKeys(cmd, argv, buf[:0])
	if len(keys) == 0 {
		if cmd.flags&flagNoMandatoryKeys != 0 {
			s.writeArray(0)
		} else {
			s.writeError(errGetKeysInvalid)
		}
		return
	}
	s.writeArray(len(keys))
	for _, k := range keys {
		if !withFlags {
			s.writeBulk(argv[k.pos])
			continue
		}
		s.writeArray(2)
		s.writeBulk(argv[k.pos])
		s.writeKeyFlags(k.flags)
	}
}

// writeCommandInfo writes Redis 7's ten-field command description: the
// first key, last key and step derived from its key specs (legacyKeys),
// its ACL categories, and its key specs.
func (s *session) writeCommandInfo(cmd *command) {
	var flags []string
	for _, f := range flagNames {
		if cmd.flags&f.flag != 0 {
			flags = append(flags, f.name)
		}
	}
	s.writeArray(10)
	s.writeBulkString(cmd.name)
	s.writeInt(int64(cmd.arity))
	s.writeSet(len(flags))
	for _, f := range flags {
		s.writeSimple(f)
	}
	s.writeInt(int64(cmd.firstKey))
	s.writeInt(int64(cmd.lastKey))
	s.writeInt(int64(cmd.keyStep))
	s.writeCategories(aclCategories(cmd, ""))
	s.writeArray(0) // tips
	s.writeKeySpecs(cmd.keySpecs)
	s.writeArray(len(cmd.subs))
	for _, sub := range cmd.subs {
		s.writeArray(10)
		s.writeBulkString(cmd.name + "|" + sub)
		s.writeInt(-2)
		s.writeSet(0)
		s.writeInt(0)
		s.writeInt(0)
		s.writeInt(0)
		s.writeCategories(aclCategories(cmd, sub))
		s.writeArray(0)
		s.writeArray(0)
		s.writeArray(0)
	}
}

// writeCategories writes ACL categories as COMMAND INFO does, each with @,
// in ACL CAT's order.
func (s *session) writeCategories(cats []string) {
	var in []string
	for _, c := range acl.Categories {
		if slices.Contains(cats, c) {
			in = append(in, c)
		}
	}
	s.writeSet(len(in))
	for _, c := range in {
		s.writeSimple("@" + c)
	}
}

// writeKeyFlags writes a key spec's flags, as Redis names them.
func (s *session) writeKeyFlags(f keyFlags) {
	n := 0
	for _, kf := range keyFlagNames {
		if f&kf.flag != 0 {
			n++
		}
	}
	s.writeSet(n)
	for _, kf := range keyFlagNames {
		if f&kf.flag != 0 {
			s.writeSimple(kf.name)
		}
	}
}

// writeKeySpecs writes key specifications in Redis 7's form: notes, flags,
// begin_search (index or keyword) and find_keys (range or keynum).
func (s *session) writeKeySpecs(specs []keySpec) {
	s.writeArray(len(specs))
	for i := range specs {
		ks := &specs[i]
		if ks.notes != "" {
			s.writeMap(4)
			s.writeBulkString("notes")
			s.writeBulkString(ks.notes)
		} else {
			s.writeMap(3)
		}
		s.writeBulkString("flags")
		s.writeKeyFlags(ks.flags)
		s.writeBulkString("begin_search")
		s.writeMap(2)
		s.writeBulkString("type")
		if ks.keyword != "" {
			s.writeBulkString("keyword")
			s.writeBulkString("spec")
			s.writeMap(2)
			s.writeBulkString("keyword")
			s.writeBulkString(ks.keyword)
			s.writeBulkString("startfrom")
			s.writeInt(int64(ks.startFrom))
		} else {
			s.writeBulkString("index")
			s.writeBulkString("spec")
			s.writeMap(1)
			s.writeBulkString("index")
			s.writeInt(int64(ks.index))
		}
		s.writeBulkString("find_keys")
		s.writeMap(2)
		s.writeBulkString("type")
		if ks.keyNum {
			s.writeBulkString("keynum")
			s.writeBulkString("spec")
			s.writeMap(3)
			s.writeBulkString("keynumidx")
			s.writeInt(int64(ks.keyNumIdx))
			s.writeBulkString("firstkey")
			s.writeInt(int64(ks.firstKey))
			s.writeBulkString("keystep")
			s.writeInt(int64(ks.keyStep))
		} else {
			s.writeBulkString("range")
			s.writeBulkString("spec")
			s.writeMap(3)
			s.writeBulkString("lastkey")
			s.writeInt(int64(ks.lastKey))
			s.writeBulkString("keystep")
			s.writeInt(int64(ks.keyStep))
			s.writeBulkString("limit")
			s.writeInt(int64(ks.limit))
		}
	}
}

// writeCommandDocs writes the documentation map COMMAND DOCS returns and
// redis-cli turns into its hints.
func (s *session) writeCommandDocs(cmd *command) {
	fields := 4
	if len(cmd.arguments) > 0 {
		fields++
	}
	s.writeMap(fields)
	s.writeBulkString("summary")
	s.writeBulkString(cmd.summary)
	s.writeBulkString("since")
	s.writeBulkString(cmd.since)
	s.writeBulkString("group")
	s.writeBulkString(cmd.group)
	s.writeBulkString("complexity")
	s.writeBulkString(cmd.complexity)
	if len(cmd.arguments) == 0 {
		return
	}
	s.writeBulkString("arguments")
	s.writeArray(len(cmd.arguments))
	for _, a := range cmd.arguments {
		var flags []string
		if a.optional {
			flags = append(flags, "optional")
		}
		if a.multiple {
			flags = append(flags, "multiple")
		}
		n := 3
		if a.token != "" {
			n++
		}
		if len(flags) > 0 {
			n++
		}
		s.writeMap(n)
		s.writeBulkString("name")
		s.writeBulkString(a.name)
		s.writeBulkString("type")
		s.writeBulkString(a.typ)
		s.writeBulkString("display_text")
		s.writeBulkString(strings.ReplaceAll(a.name, " ", "_"))
		if a.token != "" {
			s.writeBulkString("token")
			s.writeBulkString(a.token)
		}
		if len(flags) > 0 {
			s.writeBulkString("flags")
			s.writeSet(len(flags))
			for _, f := range flags {
				s.writeSimple(f)
			}
		}
	}
}
