package commands

// Error is a reply error: its text is sent to the client as is, after '-',
// and starts with the Redis error code (ERR, WRONGTYPE, NOAUTH, OOM, ...).
type Error string

func (e Error) Error() string { return string(e) }

// The error vocabulary. Wording follows Redis where Redis has a word for it.
const (
	errNotInteger        Error = "ERR value is not an integer or out of range"
	errSyntax            Error = "ERR syntax error"
	errNoAuth            Error = "NOAUTH Authentication required."
	errWrongPass         Error = "WRONGPASS invalid username-password pair or user is disabled."
	errNoPassSet         Error = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	errMaxClients        Error = "ERR max number of clients reached"
	errInvalidDBIdx      Error = "ERR DB index is out of range"
	errNoProto           Error = "NOPROTO unsupported protocol version"
	errPatternTooComplex Error = "ERR pattern too complex: matching it against one key takes more than the work one command may do"
	errDebugDisabled     Error = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."
	// errClientEvicted closes a client chosen by maxmemory-clients; it is
	// never sent: an evicted client is closed without a reply, as in Redis.
	errClientEvicted Error = "ERR client evicted: the clients' buffers passed maxmemory-clients"
	errCantShutdown  Error = "ERR Errors trying to SHUTDOWN. Check logs."
	errNoShutdown    Error = "ERR No shutdown in progress."
	errNoShutdowner  Error = "ERR SHUTDOWN is not available on this server"
)

// errWrongArgs is Redis's arity error for the command named (lower case) name.
func errWrongArgs(name string) Error {
	return Error("ERR wrong number of arguments for '" + name + "' command")
}
