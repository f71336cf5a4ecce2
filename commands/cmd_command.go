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

func cmdCommand(c *Client, args [][]byte) {
	if len(args) == 1 {
		list := sortedCommands()
		c.writeArray(len(list))
		for _, cmd := range list {
			c.writeCommandInfo(cmd)
		}
		return
	}
	sub := args[1]
	switch {
	case equalFold(sub, "count") && len(args) == 2:
		c.writeInt(int64(len(commandTable)))
	case equalFold(sub, "list") && len(args) == 2:
		list := sortedCommands()
		c.writeArray(len(list))
		for _, cmd := range list {
			c.writeBulkString(cmd.name)
		}
	case equalFold(sub, "info"):
		list := commandsNamed(args[2:])
		c.writeArray(len(list))
		for _, cmd := range list {
			if cmd == nil {
				c.writeNull()
				continue
			}
			c.writeCommandInfo(cmd)
		}
	case equalFold(sub, "docs"):
		var list []*command
		for _, cmd := range commandsNamed(args[2:]) {
			if cmd != nil {
				list = append(list, cmd)
			}
		}
		c.writeMap(len(list))
		for _, cmd := range list {
			c.writeBulkString(cmd.name)
			c.writeCommandDocs(cmd)
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
		c.writeArray(len(help))
		for _, l := range help {
			c.writeSimple(l)
		}
	default:
		c.writeError(errUnknownSubcommand(sub, "COMMAND"))
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
func (c *Client) writeCommandInfo(cmd *command) {
	var flags []string
	for _, f := range flagNames {
		if cmd.flags&f.flag != 0 {
			flags = append(flags, f.name)
		}
	}
	c.writeArray(10)
	c.writeBulkString(cmd.name)
	c.writeInt(int64(cmd.arity))
	c.writeSet(len(flags))
	for _, f := range flags {
		c.writeSimple(f)
	}
	c.writeInt(int64(cmd.firstKey))
	c.writeInt(int64(cmd.lastKey))
	c.writeInt(int64(cmd.keyStep))
	c.writeSet(1)
	c.writeSimple("@" + cmd.group)
	c.writeArray(0) // tips
	if cmd.firstKey == 0 {
		c.writeArray(0)
	} else {
		c.writeKeySpec(cmd)
	}
	c.writeArray(len(cmd.subs))
	for _, s := range cmd.subs {
		c.writeArray(10)
		c.writeBulkString(cmd.name + "|" + s)
		c.writeInt(-2)
		c.writeSet(0)
		c.writeInt(0)
		c.writeInt(0)
		c.writeInt(0)
		c.writeSet(1)
		c.writeSimple("@" + cmd.group)
		c.writeArray(0)
		c.writeArray(0)
		c.writeArray(0)
	}
}

// writeKeySpec writes one key specification: the keys start at argument
// firstKey and run to lastKey (-1: the last argument) in steps of keyStep.
func (c *Client) writeKeySpec(cmd *command) {
	access := "RW"
	if cmd.flags&flagReadOnly != 0 {
		access = "RO"
	}
	c.writeArray(1)
	c.writeMap(3)
	c.writeBulkString("flags")
	c.writeSet(1)
	c.writeSimple(access)
	c.writeBulkString("begin_search")
	c.writeMap(2)
	c.writeBulkString("type")
	c.writeBulkString("index")
	c.writeBulkString("spec")
	c.writeMap(1)
	c.writeBulkString("index")
	c.writeInt(int64(cmd.firstKey))
	c.writeBulkString("find_keys")
	c.writeMap(2)
	c.writeBulkString("type")
	c.writeBulkString("range")
	c.writeBulkString("spec")
	c.writeMap(3)
	c.writeBulkString("lastkey")
	last := int64(cmd.lastKey - cmd.firstKey)
	if cmd.lastKey < 0 {
		last = int64(cmd.lastKey)
	}
	c.writeInt(last)
	c.writeBulkString("keystep")
	c.writeInt(int64(cmd.keyStep))
	c.writeBulkString("limit")
	c.writeInt(0)
}

// writeCommandDocs writes the documentation map COMMAND DOCS returns and
// redis-cli turns into its hints.
func (c *Client) writeCommandDocs(cmd *command) {
	fields := 4
	if len(cmd.arguments) > 0 {
		fields++
	}
	c.writeMap(fields)
	c.writeBulkString("summary")
	c.writeBulkString(cmd.summary)
	c.writeBulkString("since")
	c.writeBulkString(cmd.since)
	c.writeBulkString("group")
	c.writeBulkString(cmd.group)
	c.writeBulkString("complexity")
	c.writeBulkString(cmd.complexity)
	if len(cmd.arguments) == 0 {
		return
	}
	c.writeBulkString("arguments")
	c.writeArray(len(cmd.arguments))
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
		c.writeMap(n)
		c.writeBulkString("name")
		c.writeBulkString(a.name)
		c.writeBulkString("type")
		c.writeBulkString(a.typ)
		c.writeBulkString("display_text")
		c.writeBulkString(strings.ReplaceAll(a.name, " ", "_"))
		if a.token != "" {
			c.writeBulkString("token")
			c.writeBulkString(a.token)
		}
		if len(flags) > 0 {
			c.writeBulkString("flags")
			c.writeSet(len(flags))
			for _, f := range flags {
				c.writeSimple(f)
			}
		}
	}
}
