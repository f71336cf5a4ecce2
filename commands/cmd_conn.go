package commands

import (
	"crypto/subtle"
	"strconv"
)

// The connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, TIME.

// Version is sluice's version, reported by HELLO and INFO.
const Version = "0.1.0"

func init() {
	register(
		&command{name: "ping", arity: -1, maxArgs: 2, flags: flagFast, run: cmdPing, group: "connection", since: "0.1.0",
			summary: "Returns PONG, or the message.", complexity: "O(1)",
			arguments: []argDoc{{name: "message", typ: "string", optional: true}}},
		&command{name: "echo", arity: 2, flags: flagFast, run: cmdEcho, group: "connection", since: "0.1.0",
			summary: "Returns the message.", complexity: "O(1)", arguments: []argDoc{{name: "message", typ: "string"}}},
		&command{name: "hello", arity: -1, flags: flagNoAuth | flagFast, run: cmdHello, group: "connection", since: "0.1.0",
			summary:    "Handshakes: selects RESP2 or RESP3, optionally authenticates and names the connection.",
			complexity: "O(1)", arguments: []argDoc{
				{name: "protover", typ: "integer", optional: true},
				{name: "username password", typ: "string", token: "AUTH", optional: true},
				{name: "clientname", typ: "string", token: "SETNAME", optional: true},
			}},
		&command{name: "auth", arity: -2, maxArgs: 3, flags: flagNoAuth | flagFast, run: cmdAuth, group: "connection",
			since: "0.1.0", summary: "Authenticates the connection.", complexity: "O(1)",
			arguments: []argDoc{{name: "username", typ: "string", optional: true}, {name: "password", typ: "string"}}},
		&command{name: "select", arity: 2, flags: flagFast, run: cmdSelect, group: "connection", since: "0.1.0",
			summary: "Selects database 0, the only one.", complexity: "O(1)", arguments: []argDoc{{name: "index", typ: "integer"}}},
		&command{name: "quit", arity: -1, flags: flagNoAuth | flagFast, run: cmdQuit, group: "connection", since: "0.1.0",
			summary: "Closes the connection.", complexity: "O(1)"},
		&command{name: "time", arity: 1, flags: flagFast, run: cmdTime, group: "server", since: "0.1.0",
			summary: "Returns the server's time (the DEBUG CLOCK time when one is set).", complexity: "O(1)"},
	)
}

func cmdPing(c *Client, args [][]byte) {
	if len(args) == 2 {
		c.writeBulk(args[1])
		return
	}
	c.writeSimple("PONG")
}

func cmdEcho(c *Client, args [][]byte) { c.writeBulk(args[1]) }

// cmdHello: HELLO [protover [AUTH username password] [SETNAME clientname]]
func cmdHello(c *Client, args [][]byte) {
	// arguments
	proto := 0
	if len(args) >= 2 {
		v, ok := parseInt(args[1])
		if !ok {
			c.writeError(Error("ERR Protocol version is not an integer or out of range"))
			return
		}
		if v != 2 && v != 3 {
			c.writeError(errNoProto)
			return
		}
		proto = int(v)
	}
	var user, pass, name []byte
	auth, setname := false, false
	for i := 2; i < len(args); i++ {
		switch {
		case equalFold(args[i], "auth") && i+2 < len(args):
			auth, user, pass = true, args[i+1], args[i+2]
			i += 2
		case equalFold(args[i], "setname") && i+1 < len(args):
			setname, name = true, args[i+1]
			i++
		default:
			c.writeError(Error("ERR Syntax error in HELLO option '" + clip(string(args[i]), 128) + "'"))
			return
		}
	}
	// operation
	if auth {
		if err := c.authenticate(user, pass); err != nil {
			c.writeError(err)
			return
		}
	}
	if !c.authed {
		c.writeError(Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"))
		return
	}
	if setname {
		if err := c.setName(name); err != nil {
			c.writeError(err)
			return
		}
	}
	if proto != 0 {
		c.resp3.Store(proto == 3)
	}
	// reply
	version := 2
	if c.resp3.Load() {
		version = 3
	}
	c.writeMap(7)
	c.writeBulkString("server")
	c.writeBulkString("sluice")
	c.writeBulkString("version")
	c.writeBulkString(Version)
	c.writeBulkString("proto")
	c.writeInt(int64(version))
	c.writeBulkString("id")
	c.writeInt(c.id)
	c.writeBulkString("mode")
	c.writeBulkString("standalone")
	c.writeBulkString("role")
	c.writeBulkString("master")
	c.writeBulkString("modules")
	c.writeArray(0)
}

// cmdAuth: AUTH [username] password
func cmdAuth(c *Client, args [][]byte) {
	user, pass := []byte("default"), args[1]
	if len(args) == 3 {
		user, pass = args[1], args[2]
	} else if c.srv.cfg.Password == "" {
		c.writeError(errNoPassSet)
		return
	}
	if err := c.authenticate(user, pass); err != nil {
		c.writeError(err)
		return
	}
	c.writeOK()
}

// authenticate checks a username/password pair against requirepass, as the
// default user of Redis. With no password set every pair for "default" is
// accepted, as Redis's nopass default user does.
func (c *Client) authenticate(user, pass []byte) error {
	if string(user) != "default" {
		return errWrongPass
	}
	want := c.srv.cfg.Password
	if want != "" && subtle.ConstantTimeCompare(pass, []byte(want)) != 1 {
		return errWrongPass
	}
	c.authed = true
	return nil
}

func cmdSelect(c *Client, args [][]byte) {
	v, ok := parseInt(args[1])
	if !ok {
		c.writeError(errNotInteger)
		return
	}
	if v != 0 {
		c.writeError(errInvalidDBIdx)
		return
	}
	c.writeOK()
}

func cmdQuit(c *Client, args [][]byte) {
	c.writeOK()
	c.closing = true
}

func cmdTime(c *Client, args [][]byte) {
	c.writeArray(2)
	c.writeBulkString(strconv.FormatInt(c.now/1e9, 10))
	c.writeBulkString(strconv.FormatInt(c.now%1e9/1e3, 10))
}
