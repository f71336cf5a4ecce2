package commands

import (
	"sort"
	"strings"
)

// COMMAND, COMMAND COUNT, COMMAND INFO, COMMAND LIST and COMMAND DOCS, in
// the shapes redis-cli and client libraries read.

func init() {
	register(&command{name: "command", arity: -1, flags: flagLoading, run: cmdCommand, group: "server", since: "0.1.0",
		summary:    "Describes the commands: COMMAND, COMMAND COUNT, COMMAND INFO, COMMAND LIST, COMMAND DOCS.",
		complexity: "O(N)", subs: []string{"count", "info", "list", "docs", "help"}})
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
	case equalFold(sub, "help") && len(args) == 2:
		help := []string{
			"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"(no subcommand)", "    Return details about all commands.",
			"COUNT", "    Return the total number of commands.",
			"LIST", "    Return a list of all commands.",
			"INFO [<command-name> ...]", "    Return details about the named commands, or all of them.",
			"DOCS [<command-name> ...]", "    Return documentation about the named commands, or all of them.",
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
	{flagLoading, "loading"}, {flagFast, "fast"},
}

// writeCommandInfo writes Redis 7's ten-field command description.
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
	s.writeSet(1)
	s.writeSimple("@" + cmd.group)
	s.writeArray(0) // tips
	if cmd.firstKey == 0 {
		s.writeArray(0)
	} else {
		s.writeKeySpec(cmd)
	}
	s.writeArray(len(cmd.subs))
	for _, sub := range cmd.subs {
		s.writeArray(10)
		s.writeBulkString(cmd.name + "|" + sub)
		s.writeInt(-2)
		s.writeSet(0)
		s.writeInt(0)
		s.writeInt(0)
		s.writeInt(0)
		s.writeSet(1)
		s.writeSimple("@" + cmd.group)
		s.writeArray(0)
		s.writeArray(0)
		s.writeArray(0)
	}
}

// writeKeySpec writes one key specification: the keys start at argument
// firstKey and run to lastKey (-1: the last argument) in steps of keyStep.
func (s *session) writeKeySpec(cmd *command) {
	access := "RW"
	if cmd.flags&flagReadOnly != 0 {
		access = "RO"
	}
	s.writeArray(1)
	s.writeMap(3)
	s.writeBulkString("flags")
	s.writeSet(1)
	s.writeSimple(access)
	s.writeBulkString("begin_search")
	s.writeMap(2)
	s.writeBulkString("type")
	s.writeBulkString("index")
	s.writeBulkString("spec")
	s.writeMap(1)
	s.writeBulkString("index")
	s.writeInt(int64(cmd.firstKey))
	s.writeBulkString("find_keys")
	s.writeMap(2)
	s.writeBulkString("type")
	s.writeBulkString("range")
	s.writeBulkString("spec")
	s.writeMap(3)
	s.writeBulkString("lastkey")
	last := int64(cmd.lastKey - cmd.firstKey)
	if cmd.lastKey < 0 {
		last = int64(cmd.lastKey)
	}
	s.writeInt(last)
	s.writeBulkString("keystep")
	s.writeInt(int64(cmd.keyStep))
	s.writeBulkString("limit")
	s.writeInt(0)
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
