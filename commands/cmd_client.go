package commands

import (
	"strconv"
	"strings"
	"time"
)

// CLIENT and its subcommands.

func init() {
	register(&command{name: "client", arity: -2, run: cmdClient, group: "connection", since: "0.1.0",
		summary: "Inspects and names connections: ID, SETNAME, GETNAME, SETINFO, INFO, LIST, KILL ID, NO-EVICT.", complexity: "O(1), LIST O(N)",
		subs: []string{"id", "setname", "getname", "setinfo", "info", "list", "kill", "no-evict", "help"}})
}

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
	"LIST",
	"    Return information about client connections.",
	"KILL ID <id>",
	"    Close the connection with this ID.",
	"NO-EVICT (ON|OFF)",
	"    Protect current client connection from eviction.",
	"HELP",
	"    Print this help.",
}

func cmdClient(c *Client, args [][]byte) {
	sub := args[1]
	switch {
	case equalFold(sub, "id") && len(args) == 2:
		c.writeInt(c.id)
	case equalFold(sub, "getname") && len(args) == 2:
		c.mu.Lock()
		name := c.name
		c.mu.Unlock()
		if name == "" {
			c.writeNull()
			return
		}
		c.writeBulkString(name)
	case equalFold(sub, "setname") && len(args) == 3:
		if err := c.setName(args[2]); err != nil {
			c.writeError(err)
			return
		}
		c.writeOK()
	case equalFold(sub, "setinfo") && len(args) == 4:
		c.clientSetInfo(args[2], args[3])
	case equalFold(sub, "info") && len(args) == 2:
		c.writeVerbatim(c.describe())
	case equalFold(sub, "list") && len(args) == 2:
		var b strings.Builder
		c.srv.forEachClient(func(o *Client) { b.WriteString(o.describe()) })
		c.writeVerbatim(b.String())
	case equalFold(sub, "kill") && len(args) == 4 && equalFold(args[2], "id"):
		id, ok := parseInt(args[3])
		if !ok {
			c.writeError(errNotInteger)
			return
		}
		killed := int64(0)
		c.srv.forEachClient(func(o *Client) {
			if o.id == id {
				o.kill()
				killed++
			}
		})
		if id == c.id {
			c.closing = true
		}
		c.writeInt(killed)
	case equalFold(sub, "no-evict") && len(args) == 3:
		switch {
		case equalFold(args[2], "on"):
			c.setNoEvict(true)
		case equalFold(args[2], "off"):
			c.setNoEvict(false)
		default:
			c.writeError(errSyntax)
			return
		}
		c.writeOK()
	case equalFold(sub, "help") && len(args) == 2:
		c.writeArray(len(clientHelp))
		for _, l := range clientHelp {
			c.writeSimple(l)
		}
	default:
		if isClientSub(sub) {
			c.writeError(Error("ERR wrong number of arguments for 'client|" + strings.ToLower(string(sub)) + "' command"))
			return
		}
		c.writeError(errUnknownSubcommand(sub, "CLIENT"))
	}
}

func isClientSub(sub []byte) bool {
	for _, s := range commandTable["client"].subs {
		if equalFold(sub, s) {
			return true
		}
	}
	return false
}

// setName validates and sets the connection's name, as CLIENT SETNAME does.
func (c *Client) setName(name []byte) error {
	if len(name) > maxNameSize {
		return Error("ERR Client names cannot be longer than " + strconv.Itoa(maxNameSize) + " bytes.")
	}
	for _, b := range name {
		if b < '!' || b > '~' {
			return Error("ERR Client names cannot contain spaces, newlines or special characters.")
		}
	}
	c.mu.Lock()
	c.name = string(name)
	c.mu.Unlock()
	return nil
}

// clientSetInfo: CLIENT SETINFO LIB-NAME|LIB-VER value
func (c *Client) clientSetInfo(attr, val []byte) {
	for _, b := range val {
		if b < '!' || b > '~' {
			c.writeError(Error("ERR " + strings.ToLower(string(attr)) + " cannot contain spaces, newlines or special characters."))
			return
		}
	}
	if len(val) > maxNameSize {
		c.writeError(Error("ERR " + strings.ToLower(string(attr)) + " is too long"))
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case equalFold(attr, "lib-name"):
		c.libName = string(val)
	case equalFold(attr, "lib-ver"):
		c.libVer = string(val)
	default:
		c.writeError(Error("ERR Unrecognized option '" + clip(string(attr), 128) + "'"))
		return
	}
	c.writeOK()
}

// describe is the client's line in CLIENT LIST and CLIENT INFO. It has only
// fields Redis has, because client libraries (go-redis) reject unknown ones.
func (c *Client) describe() string {
	c.mu.Lock()
	name, lib, ver := c.name, c.libName, c.libVer
	c.mu.Unlock()
	now := time.Now()
	resp := "2"
	if c.resp3.Load() {
		resp = "3"
	}
	idle := now.Sub(time.Unix(0, c.lastCmd.Load())) / time.Second
	if c.srv.clock.Frozen() {
		idle = 0 // the batch instant is the debug clock's, not wall time
	}
	var b strings.Builder
	b.WriteString("id=" + strconv.FormatInt(c.id, 10))
	b.WriteString(" addr=" + c.addr + " laddr=" + c.laddr + " fd=" + strconv.Itoa(c.listFD) + " name=" + name)
	b.WriteString(" age=" + strconv.FormatInt(int64(now.Sub(c.created)/time.Second), 10))
	b.WriteString(" idle=" + strconv.FormatInt(int64(max(idle, 0)), 10))
	flags := " flags=N"
	if c.noEvict.Load() {
		flags = " flags=e"
	}
	b.WriteString(flags + " db=0 sub=0 psub=0 ssub=0 multi=-1 watch=0")
	b.WriteString(" rbs=" + strconv.FormatInt(c.memIn.Load(), 10) + " omem=" + strconv.FormatInt(c.memOut.Load(), 10))
	b.WriteString(" tot-mem=" + strconv.FormatInt(c.mem.Load(), 10))
	b.WriteString(" user=default redir=-1 resp=" + resp + " lib-name=" + lib + " lib-ver=" + ver + "\n")
	return b.String()
}
