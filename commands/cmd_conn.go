package commands

import (
	"strconv"

	"github.com/sluice-rl/sluice/internal/parse"
)

// The connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, TIME.

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

func cmdPing(s *session, args [][]byte) {
	if len(args) == 2 {
		s.writeBulk(args[1])
		return
	}
	s.writeSimple("PONG")
}

func cmdEcho(s *session, args [][]byte) { s.writeBulk(args[1]) }

// cmdHello: HELLO [protover [AUTH username password] [SETNAME clientname]]
func cmdHello(s *session, args [][]byte) {
	// arguments
	proto := 0
	if len(args) >= 2 {
		v, ok := parse.Int(args[1])
		if !ok {
			s.writeError(errProtoVersion)
			return
		}
		if v != 2 && v != 3 {
			s.writeError(errNoProto)
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
			s.writeError(errHelloOption(args[i]))
			return
		}
	}
	// operation
	if auth {
		if err := s.authenticate("hello", user, pass, false); err != nil {
			s.writeError(err)
			return
		}
	}
	if !s.authed {
		s.writeError(errHelloNoAuth)
		return
	}
	if setname {
		if err := s.setName(name); err != nil {
			s.writeError(err)
			return
		}
	}
	if proto != 0 {
		s.resp3.Store(proto == 3)
	}
	// reply
	version := 2
	if s.resp3.Load() {
		version = 3
	}
	s.writeMap(7)
	s.writeBulkString("server")
	s.writeBulkString("sluice")
	s.writeBulkString("version")
	s.writeBulkString(Version)
	s.writeBulkString("proto")
	s.writeInt(int64(version))
	s.writeBulkString("id")
	s.writeInt(s.conn.ID())
	s.writeBulkString("mode")
	s.writeBulkString("standalone")
	s.writeBulkString("role")
	s.writeBulkString("master")
	s.writeBulkString("modules")
	s.writeArray(0)
}

// cmdAuth: AUTH [username] password
func cmdAuth(s *session, args [][]byte) {
	user, pass := []byte("default"), args[len(args)-1]
	if len(args) == 3 {
		user = args[1]
	}
	if err := s.authenticate("auth", user, pass, len(args) == 2); err != nil {
		s.writeError(err)
		return
	}
	s.writeOK()
}

func cmdSelect(s *session, args [][]byte) {
	v, ok := parse.Int(args[1])
	if !ok {
		s.writeError(errNotInteger)
		return
	}
	if v != 0 {
		s.writeError(errInvalidDBIdx)
		return
	}
	s.writeOK()
}

func cmdQuit(s *session, args [][]byte) {
	s.writeOK()
	s.conn.CloseAfterReply()
}

func cmdTime(s *session, args [][]byte) {
	s.writeArray(2)
	s.writeBulkString(strconv.FormatInt(s.conn.Now()/1e9, 10))
	s.writeBulkString(strconv.FormatInt(s.conn.Now()%1e9/1e3, 10))
}
