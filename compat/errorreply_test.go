package compat

import (
	"errors"
	"testing"

	"github.com/sluice-rl/sluice/internal/replyerr"
)

// An error reply gets its code from the one rule: a generic reply error
// gets "ERR " (a key too long for a shard's record once went out as
// "-key too long"), a coded one and a line that already has its code go out
// as they are.
func TestErrorReplyCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{replyerr.Generic("key too long"), "-ERR key too long\r\n"},
		{replyerr.New(replyerr.OOM, "command not allowed when used memory > 'maxmemory'."), "-OOM command not allowed when used memory > 'maxmemory'.\r\n"},
		{ErrSyntax, "-ERR syntax error\r\n"},
		{errors.New("CLUSTERDOWN no leader"), "-CLUSTERDOWN no leader\r\n"},
	} {
		r := ErrorReply(tc.err)
		if got := string(r.AppendRESP(nil, false)); got != tc.want {
			t.Errorf("ErrorReply(%q) is written %q; want %q", tc.err, got, tc.want)
		}
	}
}
