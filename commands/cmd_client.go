package commands

import (
	"strconv"
	"strings"
	"time"
)

// CLIENT and its subcommands.

func init() {
	register(&command{name: "client", arity: -2, run: cmdClient, group: "connection", since: "0.1.0",
		summary: "Inspects and names connections: ID, SETNAME, GETNAME, SETINFO, INFO, LIST [TYPE|ID], KILL (with Redis's filters), PAUSE, UNPAUSE, NO-EVICT.", complexity: "O(1), LIST O(N)",
		subs:          []string{"id", "setname", "getname", "setinfo", "info", "list", "kill", "pause", "unpause", "no-evict", "named-reply", "help"},
		subCategories: map[string][]string{"kill": clientAdmin, "list": clientAdmin, "no-evict": clientAdmin}})
}

// clientAdmin are the categories of CLIENT KILL, LIST and NO-EVICT, which
// Redis gives @admin @dangerous.
var clientAdmin = []string{"connection", "admin", "dangerous"}

var clientHelp = []string{
	"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"ID",
	"    Return the ID of the current connection.",
	"SETNAME <name>",
	"    Assign the name <name> to the current connection.",
	"GETNAME",
	"    Return the name of the current connection.",
	"SETINFO <LIB-NAME|LIB-VER> <value>",
	"    Set client library name or version.",
	"INFO",
	"    Return information about the current client connection.",
	"LIST [TYPE <type>] [ID <id> [<id> ...]]",
	"    Return information about client connections (every sluice client is of type normal).",
	"KILL <ip:port>",
	"    Kill connection made from <ip:port>.",
	"KILL <option> <value> [<option> <value> [...]]",
	"    Kill connections. Options are: ID <client-id>, ADDR <ip:port>, LADDR <ip:port>,",
	"    USER <username>, TYPE <normal|master|replica|pubsub>, MAXAGE <seconds>, SKIPME (YES|NO).",
	"PAUSE <timeout> [WRITE|ALL]",
	"    Suspend all, or just write, clients for <timeout> milliseconds (CLIENT commands still run).",
	"UNPAUSE",
	"    Stop the current client pause, resuming traffic.",
	"NO-EVICT (ON|OFF)",
	"    Protect current client connection from eviction.",
	"NAMED-REPLY (ON|OFF)",
	"    Decisions answer with named fields (a map in RESP3, a flat array in RESP2) instead of five integers.",
	"HELP",
	"    Print this help.",
}

func cmdClient(s *session, args [][]byte) {
	sub := args[1]
	switch {
	case equalFold(sub, "id") && len(args) == 2:
		s.writeInt(s.conn.ID())
	case equalFold(sub, "getname") && len(args) == 2:
		s.mu.Lock()
		name := s.name
		s.mu.Unlock()
		if name == "" {
			s.writeNull()
			return
		}
		s.writeBulkString(name)
	case equalFold(sub, "setname") && len(args) == 3:
		if err := s.setName(args[2]); err != nil {
			s.writeError(err)
			return
		}
		s.writeOK()
	case equalFold(sub, "setinfo") && len(args) == 4:
		s.clientSetInfo(args[2], args[3])
	case equalFold(sub, "info") && len(args) == 2:
		s.writeVerbatim(s.describe(s))
	case equalFold(sub, "list"):
		s.clientList(args[2:]) // client_kill.go
	case equalFold(sub, "kill") && len(args) >= 3:
		s.clientKill(args[2:])
	case equalFold(sub, "pause") && (len(args) == 3 || len(args) == 4):
		s.clientPause(args[2:]) // client_pause.go
	case equalFold(sub, "unpause") && len(args) == 2:
		s.clientUnpause()
	case equalFold(sub, "no-evict") && len(args) == 3:
		switch {
		case equalFold(args[2], "on"):
			s.conn.SetNoEvict(true)
		case equalFold(args[2], "off"):
			s.conn.SetNoEvict(false)
		default:
			s.writeError(errSyntax)
			return
		}
		s.writeOK()
	case equalFold(sub, "named-reply") && len(args) == 3:
		switch {
		case equalFold(args[2], "on"):
			s.named = true
		case equalFold(args[2], "off"):
			s.named = false
		default:
			s.writeError(errSyntax)
			return
		}
		s.writeOK()
	case equalFold(sub, "help") && len(args) == 2:
		s.writeArray(len(clientHelp))
		for _, l := range clientHelp {
			s.writeSimple(l)
		}
	default:
		if isClientSub(sub) {
			s.writeError(errWrongArgs("client|" + strings.ToLower(string(sub))))
			return
		}
		s.writeError(errUnknownSubcommand(sub, "CLIENT"))
	}
}

func isClientSub(sub []byte) bool {
	for _, name := range commandTable["client"].subs {
		if equalFold(sub, name) {
			return true
		}
	}
	return false
}

// setName validates and sets the connection's name, as CLIENT SETNAME does.
func (s *session) setName(name []byte) error {
	if len(name) > maxNameSize {
		return errNameTooLong
	}
	for _, b := range name {
		if b < '!' || b > '~' {
			return errNameChars
		}
	}
	s.mu.Lock()
	s.name = string(name)
	s.mu.Unlock()
	return nil
}

// clientSetInfo: CLIENT SETINFO LIB-NAME|LIB-VER value
func (s *session) clientSetInfo(attr, val []byte) {
	for _, b := range val {
		if b < '!' || b > '~' {
			s.writeError(errSetInfo(attr, "cannot contain spaces, newlines or special characters."))
			return
		}
	}
	if len(val) > maxNameSize {
		s.writeError(errSetInfo(attr, "is too long"))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case equalFold(attr, "lib-name"):
		s.libName = string(val)
	case equalFold(attr, "lib-ver"):
		s.libVer = string(val)
	default:
		s.writeError(errUnrecognizedOption(attr))
		return
	}
	s.writeOK()
}

// describe is the client's line in CLIENT LIST and CLIENT INFO. It has only
// fields Redis has, because client libraries (go-redis) reject unknown ones.
// Any goroutine: it reads the session's and the connection's shared fields;
// its cmd= is the command the session ran last as of its last batch's end,
// or, when s is caller, the command running (as Redis 7 shows them).
func (s *session) describe(caller *session) string {
	s.mu.Lock()
	name, lib, ver, user := s.name, s.libName, s.libVer, s.user.Name()
	s.mu.Unlock()
	ci := s.conn.Info()
	now := time.Now()
	resp := "2"
	if s.resp3.Load() {
		resp = "3"
	}
	idle := now.Sub(time.Unix(0, ci.LastBatch)) / time.Second
	if s.h.clock.Frozen() {
		idle = 0 // the batch instant is the debug clock's, not wall time
	}
	var b strings.Builder
	b.WriteString("id=" + strconv.FormatInt(ci.ID, 10))
	b.WriteString(" addr=" + ci.Addr + " laddr=" + ci.LAddr + " fd=" + strconv.Itoa(ci.FD) + " name=" + name)
	b.WriteString(" age=" + strconv.FormatInt(int64(now.Sub(ci.Created)/time.Second), 10))
	b.WriteString(" idle=" + strconv.FormatInt(int64(max(idle, 0)), 10))
	flags := " flags=N"
	if ci.NoEvict {
		flags = " flags=e"
	}
	cmd := "NULL"
	if c := s.shown.Load(); s == caller && s.ran != nil {
		cmd = s.ran.name
	} else if c != nil {
		cmd = c.name
	}
	// Redis 7's fields, in its order. Between batches sluice's read buffer
	// holds no complete command and its replies are written out whole, so
	// qbuf, argv-mem, obl and oll are 0; rbs is the read buffer, omem the
	// replies not yet written.
	rbs := strconv.FormatInt(ci.QueryBuffer, 10)
	b.WriteString(flags + " db=0 sub=0 psub=0 ssub=0 multi=-1 watch=0")
	b.WriteString(" qbuf=0 qbuf-free=" + rbs + " argv-mem=0 multi-mem=0 rbs=" + rbs + " rbp=" + rbs)
	b.WriteString(" obl=0 oll=0 omem=" + strconv.FormatInt(ci.OutputBuffer, 10))
	b.WriteString(" tot-mem=" + strconv.FormatInt(ci.Memory, 10) + " events=r cmd=" + cmd)
	b.WriteString(" user=" + user + " redir=-1 resp=" + resp + " lib-name=" + lib + " lib-ver=" + ver + "\n")
	return b.String()
}
