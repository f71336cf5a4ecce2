package commands

import (
	"os"
	"strconv"

	"github.com/sluice-rl/sluice/acl"
	"github.com/sluice-rl/sluice/internal/parse"
)

// ACL: users and their permissions, with Redis 7's subcommands and replies
// (acl_wiring.go wires the checks). Changes apply to the node that receives them,
// or to the whole group through its Raft log (changeUsers, below).

func init() {
	register(&command{name: "acl", arity: -2, flags: flagAdmin, run: cmdACL, group: "server", since: "0.1.0",
		summary:    "Manages users and their permissions: SETUSER, GETUSER, DELUSER, LIST, USERS, WHOAMI, CAT, LOG, SAVE, LOAD, DRYRUN.",
		complexity: "O(1), LIST, USERS, SAVE, LOAD O(N) in the users",
		subs:       []string{"setuser", "getuser", "deluser", "list", "users", "whoami", "cat", "log", "save", "load", "dryrun", "help"},
		// Redis's: not @admin.
		subCategories: map[string][]string{"whoami": {"connection"}, "cat": {"connection"}, "help": {"connection"}}})
}

var aclHelp = []string{
	"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CAT [<category>]",
	"    List all commands that belong to <category>, or all command categories",
	"    when no category is specified.",
	"DELUSER <username> [<username> ...]",
	"    Delete a list of users.",
	"DRYRUN <username> <command> [<arg> ...]",
	"    Returns whether the user can execute the given command without executing the command.",
	"GETUSER <username>",
	"    Get the user's details.",
	"LIST",
	"    Show users details in config file format.",
	"LOAD",
	"    Reload users from the ACL file.",
	"LOG [<count> | RESET]",
	"    Show the ACL log entries.",
	"SAVE",
	"    Save the current config to the ACL file.",
	"SETUSER <username> <attribute> [<attribute> ...]",
	"    Create or modify a user with the specified attributes.",
	"USERS",
	"    List all the registered usernames.",
	"WHOAMI",
	"    Return the current connection username.",
	"HELP",
	"    Print this help.",
}

func cmdACL(s *session, args [][]byte) {
	sub, users := args[1], s.h.acl.users
	n := len(args)
	switch {
	case equalFold(sub, "setuser") && n >= 3:
		s.changeUsers(append([][]byte{[]byte("setuser")}, args[2:]...), false)
	case equalFold(sub, "getuser") && n == 3:
		info, err := users.GetUser(string(args[2]))
		if err != nil {
			s.writeNull() // as Redis: an unknown user is nil
			return
		}
		s.writeACLUser(info)
	case equalFold(sub, "deluser") && n >= 3:
		s.changeUsers(append([][]byte{[]byte("deluser")}, args[2:]...), true)
	case equalFold(sub, "list") && n == 2:
		s.writeBulkStrings(users.List())
	case equalFold(sub, "users") && n == 2:
		s.writeBulkStrings(users.Names())
	case equalFold(sub, "whoami") && n == 2:
		s.writeBulkString(s.user.Name())
	case equalFold(sub, "cat") && n <= 3:
		if n == 2 {
			s.writeBulkStrings(s.h.acl.reg.Categories())
			return
		}
		cmds, err := s.h.acl.reg.CategoryCommands(string(args[2]))
		if err != nil {
			s.writeError(errACL(err))
			return
		}
		s.writeBulkStrings(cmds)
	case equalFold(sub, "log") && n <= 3:
		s.aclLog(args[2:])
	case equalFold(sub, "save") && n == 2:
		if s.h.cfg.ACLFile == "" {
			s.writeError(errNoACLFile)
			return
		}
		if err := users.SaveFile(s.h.cfg.ACLFile); err != nil {
			s.h.log.Error("ACL SAVE failed", "aclfile", s.h.cfg.ACLFile, "err", err)
			s.writeError(errACLSave)
			return
		}
		s.writeOK()
	case equalFold(sub, "load") && n == 2:
		s.aclLoad()
	case equalFold(sub, "dryrun") && n >= 4:
		s.aclDryRun(args[2:])
	case equalFold(sub, "help") && n == 2:
		s.writeArray(len(aclHelp))
		for _, l := range aclHelp {
			s.writeSimple(l)
		}
	default:
		for _, name := range []string{"setuser", "getuser", "deluser", "list", "users", "whoami", "cat", "log", "save", "load", "dryrun", "help"} {
			if equalFold(sub, name) {
				s.writeError(errWrongArgs("acl|" + name))
				return
			}
		}
		s.writeError(errUnknownSubcommand(sub, "ACL"))
	}
}

// writeACLUser writes ACL GETUSER's reply: a map in RESP3, a flat array of
// pairs in RESP2, in Redis 7.0's order.
func (s *session) writeACLUser(u acl.UserInfo) {
	s.writeMap(6)
	s.writeBulkString("flags")
	s.writeBulkStrings(u.Flags)
	s.writeBulkString("passwords")
	s.writeBulkStrings(u.Passwords)
	s.writeBulkString("commands")
	s.writeBulkString(u.Commands)
	s.writeBulkString("keys")
	s.writeBulkString(u.Keys)
	s.writeBulkString("channels")
	s.writeBulkString(u.Channels)
	s.writeBulkString("selectors")
	s.writeArray(0)
}

func (s *session) writeBulkStrings(list []string) {
	s.writeArray(len(list))
	for _, v := range list {
		s.writeBulkString(v)
	}
}

// aclLog: ACL LOG [count | RESET]
func (s *session) aclLog(args [][]byte) {
	count := 10
	if len(args) == 1 {
		if equalFold(args[0], "reset") {
			s.h.acl.log.Reset()
			s.writeOK()
			return
		}
		v, ok := parse.Int(args[0])
		if !ok || v < 0 {
			s.writeError(errNotInteger)
			return
		}
		count = int(min(v, 1<<20))
	}
	entries := s.h.acl.log.Entries(count)
	nowMs := s.h.clock.Now() / 1e6
	s.writeArray(len(entries))
	for i := range entries {
		e := &entries[i]
		s.writeMap(7)
		s.writeBulkString("count")
		s.writeInt(e.Count)
		s.writeBulkString("reason")
		s.writeBulkString(e.Reason.String())
		s.writeBulkString("context")
		s.writeBulkString(e.Context.String())
		s.writeBulkString("object")
		s.writeBulkString(e.Object)
		s.writeBulkString("username")
		s.writeBulkString(e.Username)
		s.writeBulkString("age-seconds")
		s.writeBulkString(strconv.FormatFloat(e.AgeSeconds(nowMs), 'f', 3, 64))
		s.writeBulkString("client-info")
		s.writeBulkString(e.ClientInfo)
	}
}

// aclDryRun: ACL DRYRUN username command [arg ...]
func (s *session) aclDryRun(args [][]byte) {
	cmd := s.h.lookupCommand(args[1])
	if cmd == nil {
		s.writeError(errACLNoCommand(args[1]))
		return
	}
	argv := args[1:]
	if !cmd.arityOK(len(argv)) {
		s.writeError(errWrongArgs(cmd.name))
		return
	}
	ac := cmd.acl
	if len(cmd.subs) > 0 && len(argv) > 1 {
		for _, sc := range ac.Subs {
			if equalFold(argv[1], sc.Name[len(ac.Name)+1:]) {
				ac = sc
				break
			}
		}
	}
	msg, err := s.h.acl.users.DryRun(string(args[0]), ac, argv)
	if err != nil {
		s.writeError(errACL(err))
		return
	}
	if msg == "OK" {
		s.writeOK()
		return
	}
	s.writeBulkString(msg)
}

// In a replicated group, ACL SETUSER, DELUSER and LOAD change the group's
// users through the Raft log (package cluster): every node applies the
// same changes in the same order, and a follower forwards them to the
// leader. Reads (GETUSER, LIST, USERS, DRYRUN, AUTH) answer from the node's
// own users, as the log has brought them; ACL SAVE writes the node's own
// aclfile from them; ACL LOG is the node's own.

// UserReplicator is the Cluster's part that replicates the ACL users through its
// log: Replicate carries out a change (argv as package acl's Users.Apply
// takes it) on every node, and returns ACL DELUSER's count.
type UserReplicator interface {
	ReplicateACL(now int64, argv [][]byte) (int64, error)
}

// userReplicator returns the Cluster, or nil on a single node.
func (h *Handler) userReplicator() UserReplicator {
	if h.cfg.Cluster == nil {
		return nil
	}
	return h.cfg.Cluster
}

// changeUsers carries out an ACL change: through the log in a group, on
// this node's users otherwise. It writes the reply: OK, or DELUSER's count
// when count is set.
func (s *session) changeUsers(argv [][]byte, count bool) {
	var n int64
	var err error
	if r := s.h.userReplicator(); r != nil {
		n, err = r.ReplicateACL(s.h.clock.Now(), argv)
	} else {
		n, err = s.h.acl.users.Apply(argv)
	}
	switch {
	case err != nil:
		s.writeError(errACL(err))
	case count:
		s.writeInt(n)
	default:
		s.writeOK()
	}
}

// aclLoad is ACL LOAD: the node's aclfile, read here and applied to the
// group's users (or this node's).
func (s *session) aclLoad() {
	path := s.h.cfg.ACLFile
	if path == "" {
		s.writeError(errNoACLFile)
		return
	}
	text, err := os.ReadFile(path)
	if err != nil {
		// LoadFile words the failure as Redis does.
		s.writeError(errACL(acl.NewUsers(s.h.acl.reg).LoadFile(path)))
		return
	}
	s.changeUsers([][]byte{[]byte("load"), []byte(path), text}, false)
}
