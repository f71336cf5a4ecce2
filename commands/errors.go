package commands

import (
	"strconv"
	"strings"

	"github.com/sluice-rl/sluice/acl"
	"github.com/sluice-rl/sluice/compat"
	"github.com/sluice-rl/sluice/internal/replyerr"
)

// The package's reply errors are the types of the one vocabulary
// (internal/replyerr): replyError has Redis's generic code, whose "ERR " the
// one rule adds when it is written; codeError has a code of its own, the
// first word of its text (NOAUTH, WRONGPASS, NOPROTO). Values compare with
// ==.
type (
	replyError = replyerr.Generic
	codeError  = replyerr.Error
)

// The error vocabulary. Wording follows Redis where Redis has a word for
// it. The functions after the block complete the texts that quote an
// argument.
var (
	errNotInteger         = replyError("value is not an integer or out of range")
	errSyntax             = replyError("syntax error")
	errInvalidSlot        = replyError("Invalid slot")
	errInvalidSlotOrCount = replyError("Invalid slot or number of keys")
	errOverrideExpire     = replyError("invalid expire time in 'rl.override|set' command")
	errMatchHits          = replyError("HITS must be a non-negative integer")
	errMatchDescriptor    = replyError("RL.MATCH needs DESCRIPTOR followed by key value pairs, at least one of each")
	errSlowlogCount       = replyError("count should be greater than or equal to -1")
	errNoPassSet          = replyError("AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
	errInvalidDBIdx       = replyError("DB index is out of range")
	errProtoVersion       = replyError("Protocol version is not an integer or out of range")
	errNameTooLong        = replyError("Client names cannot be longer than " + strconv.Itoa(maxNameSize) + " bytes.")
	errNameChars          = replyError("Client names cannot contain spaces, newlines or special characters.")
	errInvalidCursor      = replyError("invalid cursor")
	errPatternTooComplex  = replyError("pattern too complex: matching it against one key takes more than the work one command may do")
	errDebugDisabled      = replyError("DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.")
	errCantShutdown       = replyError("Errors trying to SHUTDOWN. Check logs.")
	errNoShutdown         = replyError("No shutdown in progress.")
	errNoShutdowner       = replyError("SHUTDOWN is not available on this server")
	errNoPersistence      = replyError("snapshots are not configured on this server")
	errAOFOff             = replyError("the append-only log is off on this server (start it with --appendonly yes)")
	errAOFInGroup         = replyError("BGREWRITEAOF is not available in a Raft group: the Raft log already persists every decision")
	errNoCluster          = replyError("This instance has cluster support disabled")
	errNoMeta             = replyError("this node is not a replica of a sharded cluster's meta group")
	errOutOfRangePositive = replyError("value is out of range, must be positive")

	// COMMAND GETKEYS and GETKEYSANDFLAGS (cmd_command.go), in Redis's words.
	errGetKeysNoCommand = replyError("Invalid command specified")
	errGetKeysNoKeys    = replyError("The command has no key arguments")
	errGetKeysArity     = replyError("Invalid number of arguments specified for command")
	errGetKeysInvalid   = replyError("Invalid arguments specified for command")

	// CONFIG SET and CONFIG REWRITE (config_set.go), in Redis's words.
	errNoSettings = replyError("CONFIG SET is not available on this server")
	// ErrNoConfigFile is CONFIG REWRITE's answer when the server was started
	// without a config file (Settings.Rewrite returns it).
	ErrNoConfigFile = replyError("The server is running without a config file")

	// CLIENT KILL and CLIENT LIST's filters (client_kill.go), in Redis's words.
	errClientID        = replyError("client-id should be greater than 0")
	errInvalidClientID = replyError("Invalid client ID")
	errNoSuchClient    = replyError("No such client")
	errPauseTimeout    = replyError("timeout is not an integer or out of range")
	errPauseNegative   = replyError("timeout is negative")

	// OBJECT FREQ (cmd_memory.go): Redis's words, then where sluice keeps it.
	errNoLFU = replyError("An LFU maxmemory policy is not selected, access frequency not tracked. " +
		"sluice tracks no per-key frequency: RL.TOP DECISIONS lists the keys decided most often.")

	// RL.TOP (cmd_top.go).
	errTopOff    = replyError("top keys are not kept on this server (start it with --top-keys 64)")
	errTopWindow = replyError("WINDOW must be 1m, 5m or 1h")

	// The policies (cmd_policy.go, cmd_check.go).
	errNoRulesFiles     = replyError("no rules files on this server (start it with --policies FILE)")
	errCheckConcurrency = replyError("RL.CHECK does not decide CONCURRENCY policies: use RL.ACQUIRE and RL.RELEASE")

	// RL.OVERRIDE (cmd_override.go).
	errEmptySubject        = replyError("the subject must not be empty")
	errOverrideConcurrency = replyError("RL.CHECK does not decide CONCURRENCY policies, so they take no override")
	errWrongTypeOverride   = replyerr.New(replyerr.WRONGTYPE, "Operation against a key holding the wrong kind of value")

	// The arguments of the decisions (args.go, cmd_throttle.go).
	errRateNotPositive = replyError("rate must be positive")
	errRateTooHigh     = replyError("rate is too high: at most 1 per nanosecond (1000000000/s)")
	errRateTooLow      = replyError("rate is too low: the interval between units must be under 292 years")
	// errRefillTooLong refuses a bucket that would take longer than
	// algorithms.MaxRefill to fill: its state could not end within int64
	// nanoseconds, and its reply would overstate it.
	errRefillTooLong    = replyError("capacity times the rate's interval is too long (over 146 years)")
	errMaxBurstNegative = replyError("max_burst must not be negative")
	errMaxBurstRange    = replyError("max_burst is out of range")
	errPeriodRange      = replyError("period is out of range")
	errQuantityNegative = replyError("quantity must not be negative")
	errBurstTooLong     = replyError("max_burst+1 times period/count is too long (over 146 years)")

	// Scripts (cmd_scripts.go), in Redis's words where it has them.
	errNumKeysNegative = replyError("Number of keys can't be negative")
	errNumKeysTooMany  = replyError("Number of keys can't be greater than number of args")
	errNoScript        = replyerr.New(replyerr.NOSCRIPT, "No matching script. Please use EVAL.")
	errNotBusy         = replyerr.New(replyerr.NOTBUSY, "No scripts in execution right now.")
	// Transactions (cmd_tx.go), in Redis's words.
	errNestedMulti    = replyError("MULTI calls can not be nested")
	errExecNoMulti    = replyError("EXEC without MULTI")
	errDiscardNoMulti = replyError("DISCARD without MULTI")
	errWatchInMulti   = replyError("WATCH inside MULTI is not allowed")
	errNotInMulti     = replyError("Command not allowed inside a transaction")
	errExecAbort      = replyerr.New(replyerr.EXECABORT, "Transaction discarded because of previous errors.")

	errNoAuth      = replyerr.New(replyerr.NOAUTH, "Authentication required.")
	errHelloNoAuth = replyerr.New(replyerr.NOAUTH, "HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
	errWrongPass   = replyerr.New(replyerr.WRONGPASS, "invalid username-password pair or user is disabled.")
	errProtected   = replyerr.New(replyerr.DENIED, "sluice is running in protected mode because protected mode is enabled and no password is set for the default user. "+
		"In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to sluice you may adopt one of the following solutions: "+
		"1) Restart the server with the '--protected-mode no' option (or 'protected-mode no' in its configuration file), however MAKE SURE sluice is not publicly accessible from internet if you do so. "+
		"2) Set up an authentication password for the default user (--requirepass), or users with passwords in an --aclfile. "+
		"NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.")
	errNoACLFile = replyError("This instance is not configured to use an ACL file. Start it with --aclfile, or set users with ACL SETUSER")
	errACLSave   = replyError("There was an error trying to save the ACLs. Please check the server logs for more information")
	errNoProto   = replyerr.New(replyerr.NOPROTO, "unsupported protocol version")
)

// errWrongArgs is Redis's arity error for the command named (lower case)
// name, "client|no-evict" for a subcommand.
func errWrongArgs(name string) replyError {
	return replyError("wrong number of arguments for '" + name + "' command")
}

// errUnknownCommand is Redis's reply to a command it does not know.
func errUnknownCommand(args [][]byte) replyError {
	const max = 128
	msg := "unknown command '" + clip(string(args[0]), max) + "', with args beginning with: "
	room := max
	for _, a := range args[1:] {
		if room <= 0 {
			break
		}
		part := clip(string(a), room)
		msg += "'" + part + "' "
		room -= len(part) + 3
	}
	if isPubSub(args[0]) {
		msg += "(sluice is a rate-limit server: it has no pub/sub; send these to a Redis)"
	}
	return replyError(sanitize(msg))
}

// isPubSub reports whether name is one of Redis's pub/sub commands, which
// sluice does not serve: its unknown-command error says so.
func isPubSub(name []byte) bool {
	for _, c := range []string{"subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe",
		"sunsubscribe", "publish", "spublish", "pubsub"} {
		if equalFold(name, c) {
			return true
		}
	}
	return false
}

// errACL is an error of the acl package as a reply: its text is Redis's
// (acl_wiring.go's vocabulary), with the generic code unless it has its own.
func errACL(err error) error {
	text := sanitize(err.Error())
	if replyerr.HasCode(text) {
		return codeError(text)
	}
	return replyError(text)
}

// errACLNoCommand is ACL DRYRUN's error for a command that does not exist.
func errACLNoCommand(name []byte) replyError {
	return replyError(sanitize("Command '" + clip(string(name), 128) + "' not found"))
}

// errNoPerm is the NOPERM error of a denied command (Redis 7.0's words,
// from the acl package); cmd is the command's full name.
func errNoPerm(d acl.Denial, cmd string) codeError { return codeError(d.Error(cmd)) }

// errPermChanged is EXEC's element for a queued command that the user's
// rules, changed since it was queued, no longer allow (Redis 7.0's
// multi.c words).
func errPermChanged(r acl.Reason) codeError {
	reason := "no permission"
	switch r {
	case acl.DeniedCommand:
		reason = "no permission to execute the command or subcommand"
	case acl.DeniedKey:
		reason = "no permission to touch the specified keys"
	case acl.DeniedChannel:
		reason = "no permission to access one of the channels used as arguments"
	}
	return replyerr.New(replyerr.NOPERM, "ACLs rules changed between the moment the transaction was accumulated and the EXEC call. "+
		"This command is no longer allowed for the following reason: "+reason)
}

// errUnknownSubcommand is Redis's reply to an unknown subcommand of cmd.
func errUnknownSubcommand(sub []byte, cmd string) replyError {
	return replyError(sanitize("unknown subcommand '" + clip(string(sub), 128) + "'. Try " + cmd + " HELP."))
}

// errUnknownScript is the reply to a script text that is none of the known
// limiter scripts: sluice runs no Lua. It names the script the text most
// resembles, and the native command to use instead.
func errUnknownScript(sha1hex string, like *compat.Script) replyError {
	msg := "sluice runs no Lua, only the known limiter scripts natively (Spring Cloud Gateway, go-redis/redis_rate, " +
		"rate-limiter-flexible, rate-limit-redis, ulule/limiter; docs/compat.md), and this script (SHA1 " + sha1hex +
		") is not one of them"
	if like != nil {
		msg += ": it resembles " + like.Library + "'s " + like.Name + " (" + like.Versions + "); the native command is " + like.Native
	} else {
		msg += ": use the RL.* commands (RL.TOKEN, RL.FIXED, …) instead"
	}
	return replyError(msg)
}

// errHelloOption is HELLO's error for an option it does not take.
func errHelloOption(opt []byte) replyError {
	return replyError(sanitize("Syntax error in HELLO option '" + clip(string(opt), 128) + "'"))
}

// errSetInfo is CLIENT SETINFO's error for a value that is not one word of
// printable characters (what "cannot contain …" or "is too long").
func errSetInfo(attr []byte, what string) replyError {
	return replyError(sanitize(strings.ToLower(string(attr)) + " " + what))
}

// errUnrecognizedOption is CLIENT SETINFO's error for an attribute it does
// not know.
func errUnrecognizedOption(attr []byte) replyError {
	return replyError(sanitize("Unrecognized option '" + clip(string(attr), 128) + "'"))
}

// errUnknownAlgo is RL.POLICY SET's error for an algorithm it does not know.
func errUnknownAlgo(arg []byte) replyError {
	return replyError("unknown algorithm '" + printable(arg) + "': use TOKEN, LEAKY, FIXED, SLIDING, LOG or CONCURRENCY")
}

// errNotPositive is the error for a capacity, limit or duration (named what)
// that is zero or negative.
func errNotPositive(what string) replyError { return replyError(what + " must be positive") }

// errNoUnit is the error for a duration written as a bare integer.
func errNoUnit(what string) replyError { return replyError(what + " needs a unit, like 60s or 1500ms") }

// errDurationRange is the error for a duration beyond int64 nanoseconds.
func errDurationRange(what string) replyError { return replyError(what + " is out of range") }

// errInvalidDuration is the error for a duration that is not an integer
// followed by a known unit.
func errInvalidDuration(what string, arg []byte) replyError {
	return replyError("invalid " + what + " '" + printable(arg) +
		"': use a positive integer and a unit (ms, s, m, h, d), like 60s or 1500ms")
}

// errInvalidRate is the error for a rate written in none of the accepted forms.
func errInvalidRate(arg []byte) replyError {
	return replyError("invalid rate '" + printable(arg) +
		"': use N/unit like 10/s, 100/m, 5000/h, N/duration like 100/90s, or a plain number per second")
}

// errAllTooMany is the error for an RL.ALL naming more than max limits.
func errAllTooMany(max int64) replyError {
	return replyError("too many limits in RL.ALL: at most all-max-limits (" + strconv.FormatInt(max, 10) + ")")
}

// errAllTooManyUnits is the error for an RL.ALL whose LOG limits would log
// more than max units together.
func errAllTooManyUnits(max int64) replyError {
	return replyError("too many LOG units in RL.ALL: n times the number of LOG limits is at most all-max-log-units (" +
		strconv.FormatInt(max, 10) + ")")
}

// errCheckTooMany is the error for an RL.CHECK naming more than max pairs.
func errCheckTooMany(max int64) replyError {
	return replyError("too many policy subject pairs in RL.CHECK: at most all-max-limits (" + strconv.FormatInt(max, 10) + ")")
}

// errCheckTooManyUnits is the error for an RL.CHECK whose LOG policies
// would log more than max units together.
func errCheckTooManyUnits(max int64) replyError {
	return replyError("too many LOG units in RL.CHECK: n times the number of LOG policies is at most all-max-log-units (" +
		strconv.FormatInt(max, 10) + ")")
}

// errAllAlgo is RL.ALL's error for an algorithm name it does not know.
func errAllAlgo(b []byte) replyError {
	return replyError("unknown algorithm '" + printable(b) + "' in RL.ALL: use TOKEN, LEAKY, FIXED, SLIDING or LOG")
}

// errAboveLogMax is the error for an RL.LOG or RL.ACQUIRE limit above the
// configured bound on their state's size.
func errAboveLogMax(max int64) replyError {
	return replyError("limit is above log-max-limit (" + strconv.FormatInt(max, 10) + ")")
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// sanitize replaces the bytes that would break an error line, as Redis does.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '\r' || c == '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}
