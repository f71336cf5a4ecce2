package shard

import (
	"testing"

	"github.com/sluice-rl/sluice/internal/replyerr"
)

// goldenReplyErrors is every reply error of the shard and the bytes a
// client reads (as the commands wrote them before the one vocabulary).
var goldenReplyErrors = []struct {
	name string
	err  error
	wire string
}{
	{"ErrOOM", ErrOOM, "-OOM command not allowed when used memory > 'maxmemory'.\r\n"},
	{"ErrKeyTooLong", ErrKeyTooLong, "-ERR key too long\r\n"},
}

func TestReplyErrorsGolden(t *testing.T) {
	for _, tc := range goldenReplyErrors {
		if got := string(replyerr.Append(nil, tc.err)); got != tc.wire {
			t.Errorf("%s is written %q; want %q", tc.name, got, tc.wire)
		}
	}
}
