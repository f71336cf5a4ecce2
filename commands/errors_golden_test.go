package commands

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sluice-rl/sluice/acl"
	"github.com/sluice-rl/sluice/internal/replyerr"
)

// goldenReplyErrors is every reply error of the package, with sample
// arguments for those that quote one, and the bytes a client reads.
var goldenReplyErrors = []struct {
	name string
	err  error
	wire string
}{
	{"errNotInteger", errNotInteger, "-ERR value is not an integer or out of range\r\n"},
	{"errSyntax", errSyntax, "-ERR syntax error\r\n"},
	{"errOverrideExpire", errOverrideExpire, "-ERR invalid expire time in 'rl.override|set' command\r\n"},
	{"errMatchHits", errMatchHits, "-ERR HITS must be a non-negative integer\r\n"},
	{"errMatchDescriptor", errMatchDescriptor, "-ERR RL.MATCH needs DESCRIPTOR followed by key value pairs, at least one of each\r\n"},
	{"errSlowlogCount", errSlowlogCount, "-ERR count should be greater than or equal to -1\r\n"},
	{"errNoPassSet", errNoPassSet, "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n"},
	{"errInvalidDBIdx", errInvalidDBIdx, "-ERR DB index is out of range\r\n"},
	{"errProtoVersion", errProtoVersion, "-ERR Protocol version is not an integer or out of range\r\n"},
	{"errNameTooLong", errNameTooLong, "-ERR Client names cannot be longer than 1024 bytes.\r\n"},
	{"errNameChars", errNameChars, "-ERR Client names cannot contain spaces, newlines or special characters.\r\n"},
	{"errInvalidCursor", errInvalidCursor, "-ERR invalid cursor\r\n"},
	{"errPatternTooComplex", errPatternTooComplex, "-ERR pattern too complex: matching it against one key takes more than the work one command may do\r\n"},
	{"errDebugDisabled", errDebugDisabled, "-ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.\r\n"},
	{"errCantShutdown", errCantShutdown, "-ERR Errors trying to SHUTDOWN. Check logs.\r\n"},
	{"errNoShutdown", errNoShutdown, "-ERR No shutdown in progress.\r\n"},
	{"errNoShutdowner", errNoShutdowner, "-ERR SHUTDOWN is not available on this server\r\n"},
	{"errNoPersistence", errNoPersistence, "-ERR snapshots are not configured on this server\r\n"},
	{"errAOFOff", errAOFOff, "-ERR the append-only log is off on this server (start it with --appendonly yes)\r\n"},
	{"errAOFInGroup", errAOFInGroup, "-ERR BGREWRITEAOF is not available in a Raft group: the Raft log already persists every decision\r\n"},
	{"errNoCluster", errNoCluster, "-ERR This instance has cluster support disabled\r\n"},
	{"errOutOfRangePositive", errOutOfRangePositive, "-ERR value is out of range, must be positive\r\n"},
	{"errGetKeysNoCommand", errGetKeysNoCommand, "-ERR Invalid command specified\r\n"},
	{"errGetKeysNoKeys", errGetKeysNoKeys, "-ERR The command has no key arguments\r\n"},
	{"errGetKeysArity", errGetKeysArity, "-ERR Invalid number of arguments specified for command\r\n"},
	{"errGetKeysInvalid", errGetKeysInvalid, "-ERR Invalid arguments specified for command\r\n"},
	{"errNoSettings", errNoSettings, "-ERR CONFIG SET is not available on this server\r\n"},
	{"ErrNoConfigFile", ErrNoConfigFile, "-ERR The server is running without a config file\r\n"},
	{"errClientID", errClientID, "-ERR client-id should be greater than 0\r\n"},
	{"errInvalidClientID", errInvalidClientID, "-ERR Invalid client ID\r\n"},
	{"errNoSuchClient", errNoSuchClient, "-ERR No such client\r\n"},
	{"errPauseTimeout", errPauseTimeout, "-ERR timeout is not an integer or out of range\r\n"},
	{"errPauseNegative", errPauseNegative, "-ERR timeout is negative\r\n"},
	{"errNoLFU", errNoLFU, "-ERR An LFU maxmemory policy is not selected, access frequency not tracked. sluice tracks no per-key frequency: RL.TOP DECISIONS lists the keys decided most often.\r\n"},
	{"errTopOff", errTopOff, "-ERR top keys are not kept on this server (start it with --top-keys 64)\r\n"},
	{"errTopWindow", errTopWindow, "-ERR WINDOW must be 1m, 5m or 1h\r\n"},
	{"errNoRulesFiles", errNoRulesFiles, "-ERR no rules files on this server (start it with --policies FILE)\r\n"},
	{"errCheckConcurrency", errCheckConcurrency, "-ERR RL.CHECK does not decide CONCURRENCY policies: use RL.ACQUIRE and RL.RELEASE\r\n"},
	{"errEmptySubject", errEmptySubject, "-ERR the subject must not be empty\r\n"},
	{"errOverrideConcurrency", errOverrideConcurrency, "-ERR RL.CHECK does not decide CONCURRENCY policies, so they take no override\r\n"},
	{"errWrongTypeOverride", errWrongTypeOverride, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
	{"errRateNotPositive", errRateNotPositive, "-ERR rate must be positive\r\n"},
	{"errRateTooHigh", errRateTooHigh, "-ERR rate is too high: at most 1 per nanosecond (1000000000/s)\r\n"},
	{"errRateTooLow", errRateTooLow, "-ERR rate is too low: the interval between units must be under 292 years\r\n"},
	{"errRefillTooLong", errRefillTooLong, "-ERR capacity times the rate's interval is too long (over 146 years)\r\n"},
	{"errMaxBurstNegative", errMaxBurstNegative, "-ERR max_burst must not be negative\r\n"},
	{"errMaxBurstRange", errMaxBurstRange, "-ERR max_burst is out of range\r\n"},
	{"errPeriodRange", errPeriodRange, "-ERR period is out of range\r\n"},
	{"errQuantityNegative", errQuantityNegative, "-ERR quantity must not be negative\r\n"},
	{"errBurstTooLong", errBurstTooLong, "-ERR max_burst+1 times period/count is too long (over 146 years)\r\n"},
	{"errNumKeysNegative", errNumKeysNegative, "-ERR Number of keys can't be negative\r\n"},
	{"errNumKeysTooMany", errNumKeysTooMany, "-ERR Number of keys can't be greater than number of args\r\n"},
	{"errNoScript", errNoScript, "-NOSCRIPT No matching script. Please use EVAL.\r\n"},
	{"errNotBusy", errNotBusy, "-NOTBUSY No scripts in execution right now.\r\n"},
	{"errNestedMulti", errNestedMulti, "-ERR MULTI calls can not be nested\r\n"},
	{"errExecNoMulti", errExecNoMulti, "-ERR EXEC without MULTI\r\n"},
	{"errDiscardNoMulti", errDiscardNoMulti, "-ERR DISCARD without MULTI\r\n"},
	{"errWatchInMulti", errWatchInMulti, "-ERR WATCH inside MULTI is not allowed\r\n"},
	{"errNotInMulti", errNotInMulti, "-ERR Command not allowed inside a transaction\r\n"},
	{"errExecAbort", errExecAbort, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
	{"errNoAuth", errNoAuth, "-NOAUTH Authentication required.\r\n"},
	{"errHelloNoAuth", errHelloNoAuth, "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n"},
	{"errWrongPass", errWrongPass, "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
	{"errProtected", errProtected, "-DENIED sluice is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to sluice you may adopt one of the following solutions: 1) Restart the server with the '--protected-mode no' option (or 'protected-mode no' in its configuration file), however MAKE SURE sluice is not publicly accessible from internet if you do so. 2) Set up an authentication password for the default user (--requirepass), or users with passwords in an --aclfile. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n"},
	{"errNoACLFile", errNoACLFile, "-ERR This instance is not configured to use an ACL file. Start it with --aclfile, or set users with ACL SETUSER\r\n"},
	{"errACLSave", errACLSave, "-ERR There was an error trying to save the ACLs. Please check the server logs for more information\r\n"},
	{"errNoProto", errNoProto, "-NOPROTO unsupported protocol version\r\n"},
	{"errWrongArgs(\"client|no-evict\")", errWrongArgs("client|no-evict"), "-ERR wrong number of arguments for 'client|no-evict' command\r\n"},
	{"errUnknownCommand([][]byte{[]byte(\"NOPE\"), []byte(\"a\\r\\nb\"), []byte(\"c\")})", errUnknownCommand([][]byte{[]byte("NOPE"), []byte("a\r\nb"), []byte("c")}), "-ERR unknown command 'NOPE', with args beginning with: 'a  b' 'c' \r\n"},
	{"errACL(acl.ErrSyntax)", errACL(acl.ErrSyntax), "-ERR Syntax error\r\n"},
	{"errACL(acl.ErrWrongPass)", errACL(acl.ErrWrongPass), "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
	{"errACLNoCommand([]byte(\"nope\"))", errACLNoCommand([]byte("nope")), "-ERR Command 'nope' not found\r\n"},
	{"errNoPerm(acl.Denial{Reason: acl.DeniedKey}, \"get\")", errNoPerm(acl.Denial{Reason: acl.DeniedKey}, "get"), "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"},
	{"errPermChanged(acl.DeniedCommand)", errPermChanged(acl.DeniedCommand), "-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to execute the command or subcommand\r\n"},
	{"errPermChanged(acl.DeniedKey)", errPermChanged(acl.DeniedKey), "-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to touch the specified keys\r\n"},
	{"errPermChanged(acl.DeniedChannel)", errPermChanged(acl.DeniedChannel), "-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to access one of the channels used as arguments\r\n"},
	{"errUnknownSubcommand([]byte(\"nope\"), \"CLIENT\")", errUnknownSubcommand([]byte("nope"), "CLIENT"), "-ERR unknown subcommand 'nope'. Try CLIENT HELP.\r\n"},
	{"errUnknownScript(\"0123abcd\", nil)", errUnknownScript("0123abcd", nil), "-ERR sluice runs no Lua, only the known limiter scripts natively (Spring Cloud Gateway, go-redis/redis_rate, rate-limiter-flexible, rate-limit-redis, ulule/limiter; docs/compat.md), and this script (SHA1 0123abcd) is not one of them: use the RL.* commands (RL.TOKEN, RL.FIXED, …) instead\r\n"},
	{"errHelloOption([]byte(\"NOPE\"))", errHelloOption([]byte("NOPE")), "-ERR Syntax error in HELLO option 'NOPE'\r\n"},
	{"errSetInfo([]byte(\"LIB-NAME\"), \"cannot contain spaces\")", errSetInfo([]byte("LIB-NAME"), "cannot contain spaces"), "-ERR lib-name cannot contain spaces\r\n"},
	{"errUnrecognizedOption([]byte(\"nope\"))", errUnrecognizedOption([]byte("nope")), "-ERR Unrecognized option 'nope'\r\n"},
	{"errUnknownAlgo([]byte(\"nope\"))", errUnknownAlgo([]byte("nope")), "-ERR unknown algorithm 'nope': use TOKEN, LEAKY, FIXED, SLIDING, LOG or CONCURRENCY\r\n"},
	{"errNotPositive(\"capacity\")", errNotPositive("capacity"), "-ERR capacity must be positive\r\n"},
	{"errNoUnit(\"window\")", errNoUnit("window"), "-ERR window needs a unit, like 60s or 1500ms\r\n"},
	{"errDurationRange(\"window\")", errDurationRange("window"), "-ERR window is out of range\r\n"},
	{"errInvalidDuration(\"window\", []byte(\"5x\"))", errInvalidDuration("window", []byte("5x")), "-ERR invalid window '5x': use a positive integer and a unit (ms, s, m, h, d), like 60s or 1500ms\r\n"},
	{"errInvalidRate([]byte(\"5/x\"))", errInvalidRate([]byte("5/x")), "-ERR invalid rate '5/x': use N/unit like 10/s, 100/m, 5000/h, N/duration like 100/90s, or a plain number per second\r\n"},
	{"errAllTooMany(16)", errAllTooMany(16), "-ERR too many limits in RL.ALL: at most all-max-limits (16)\r\n"},
	{"errAllTooManyUnits(1000)", errAllTooManyUnits(1000), "-ERR too many LOG units in RL.ALL: n times the number of LOG limits is at most all-max-log-units (1000)\r\n"},
	{"errCheckTooMany(16)", errCheckTooMany(16), "-ERR too many policy subject pairs in RL.CHECK: at most all-max-limits (16)\r\n"},
	{"errCheckTooManyUnits(1000)", errCheckTooManyUnits(1000), "-ERR too many LOG units in RL.CHECK: n times the number of LOG policies is at most all-max-log-units (1000)\r\n"},
	{"errAllAlgo([]byte(\"nope\"))", errAllAlgo([]byte("nope")), "-ERR unknown algorithm 'nope' in RL.ALL: use TOKEN, LEAKY, FIXED, SLIDING or LOG\r\n"},
	{"errAboveLogMax(1000)", errAboveLogMax(1000), "-ERR limit is above log-max-limit (1000)\r\n"},
	{"fmt.Errorf(\"%w: the detail\", errSyntax)", fmt.Errorf("%w: the detail", errSyntax), "-ERR syntax error: the detail\r\n"},
	{"fmt.Errorf(\"%w: the detail\", errNoAuth)", fmt.Errorf("%w: the detail", errNoAuth), "-NOAUTH Authentication required.: the detail\r\n"},
	{"errors.New(\"WRONGTYPE Operation against a key holding the wrong kind of value\")", errors.New("WRONGTYPE Operation against a key holding the wrong kind of value"), "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
	{"errors.New(\"plain text\")", errors.New("plain text"), "-ERR plain text\r\n"},
	{"errors.New(\"ERR already coded\")", errors.New("ERR already coded"), "-ERR already coded\r\n"},
}

func TestReplyErrorsGolden(t *testing.T) {
	for _, tc := range goldenReplyErrors {
		if got := string(replyerr.Append(nil, tc.err)); got != tc.wire {
			t.Errorf("%s is written %q; want %q", tc.name, got, tc.wire)
		}
	}
}
