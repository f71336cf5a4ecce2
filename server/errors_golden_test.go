package server

import (
	"testing"

	"github.com/sluice-rl/sluice/internal/replyerr"
)

// goldenReplyErrors is every reply error of the transport and the bytes a
// client reads.
var goldenReplyErrors = []struct {
	name string
	err  error
	wire string
}{
	{"errProtoMultibulkLen", errProtoMultibulkLen, "-ERR Protocol error: invalid multibulk length\r\n"},
	{"errProtoBulkLen", errProtoBulkLen, "-ERR Protocol error: invalid bulk length\r\n"},
	{"errProtoBigMbulkCount", errProtoBigMbulkCount, "-ERR Protocol error: too big mbulk count string\r\n"},
	{"errProtoBigBulkCount", errProtoBigBulkCount, "-ERR Protocol error: too big bulk count string\r\n"},
	{"errProtoBigInline", errProtoBigInline, "-ERR Protocol error: too big inline request\r\n"},
	{"errProtoUnbalanced", errProtoUnbalanced, "-ERR Protocol error: unbalanced quotes in request\r\n"},
	{"errProtoUnauthMbulk", errProtoUnauthMbulk, "-ERR Protocol error: unauthenticated multibulk length\r\n"},
	{"errProtoUnauthBulk", errProtoUnauthBulk, "-ERR Protocol error: unauthenticated bulk length\r\n"},
	{"errProtoQueryBufLimit", errProtoQueryBufLimit, "-ERR Protocol error: client query buffer limit reached\r\n"},
	{"errProtoExpected", errProtoExpected, "-ERR Protocol error: expected '$', got \r\n"},
	{"errProtoExpectedDollar('x')", errProtoExpectedDollar('x'), "-ERR Protocol error: expected '$', got 'x'\r\n"},
	{"errMaxClients", errMaxClients, "-ERR max number of clients reached\r\n"},
	{"errSettingRange", errSettingRange, "-ERR argument must be at least 1 (0 or more for a timeout)\r\n"},
	{"errInternal", errInternal, "-ERR internal error while running the command; closing the connection\r\n"},
	{"errClientEvicted", errClientEvicted, "-ERR client evicted: the clients' buffers passed maxmemory-clients\r\n"},
}

func TestReplyErrorsGolden(t *testing.T) {
	for _, tc := range goldenReplyErrors {
		if got := string(replyerr.Append(nil, tc.err)); got != tc.wire {
			t.Errorf("%s is written %q; want %q", tc.name, got, tc.wire)
		}
	}
}
