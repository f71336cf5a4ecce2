package server

import (
	"errors"

	"github.com/sluice-rl/sluice/internal/replyerr"
)

// replyError is a reply error of the transport: all have Redis's generic
// code, whose "ERR " the one rule (replyerr.Line) adds when it is written.
type replyError = replyerr.Generic

// The transport's errors. The wording is Redis's.
var (
	errProtoMultibulkLen  = replyError("Protocol error: invalid multibulk length")
	errProtoBulkLen       = replyError("Protocol error: invalid bulk length")
	errProtoBigMbulkCount = replyError("Protocol error: too big mbulk count string")
	errProtoBigBulkCount  = replyError("Protocol error: too big bulk count string")
	errProtoBigInline     = replyError("Protocol error: too big inline request")
	errProtoUnbalanced    = replyError("Protocol error: unbalanced quotes in request")
	errProtoUnauthMbulk   = replyError("Protocol error: unauthenticated multibulk length")
	errProtoUnauthBulk    = replyError("Protocol error: unauthenticated bulk length")
	errProtoQueryBufLimit = replyError("Protocol error: client query buffer limit reached")
	errProtoExpected      = replyError("Protocol error: expected '$', got ") // errProtoExpectedDollar completes it
	errMaxClients         = replyError("max number of clients reached")
	errSettingRange       = replyError("argument must be at least 1 (0 or more for a timeout)")
	errInternal           = replyError("internal error while running the command; closing the connection")
	// errClientEvicted closes a client chosen by maxmemory-clients; it is
	// never sent: an evicted client is closed without a reply, as in Redis.
	errClientEvicted = replyError("client evicted: the clients' buffers passed maxmemory-clients")
	errNoHandler     = errors.New("server: New needs a Handler")
	errNoDescriptor  = errors.New("server: the connection has no descriptor")
)

// errProtoExpectedDollar is the error for a multibulk argument that does
// not start with '$': got is quoted as the byte itself, as Redis's %c does.
func errProtoExpectedDollar(got byte) replyError {
	return errProtoExpected + replyError("'"+string([]byte{got})+"'")
}
