package store

import (
	"errors"
	"syscall"
	"testing"

	"github.com/sluice-rl/sluice/internal/replyerr"
)

// goldenReplyErrors is every reply error of the store and the bytes a
// client reads (as the commands wrote them before the one vocabulary).
var goldenReplyErrors = []struct {
	name string
	err  error
	wire string
}{
	{"ErrWrongType", ErrWrongType, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
	{"ErrSaveInProgress", ErrSaveInProgress, "-ERR Background save already in progress\r\n"},
	{"ErrRewriteInProgress", ErrRewriteInProgress, "-ERR Background append only file rewriting already in progress\r\n"},
	{"errBadOverride", errBadOverride, "-ERR invalid override\r\n"},
	{"errUnknownAlgo", errUnknownAlgo, "-ERR unknown algorithm\r\n"},
	{"errSnapshotMisconf", errSnapshotMisconf, "-MISCONF sluice is configured to save snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if snapshotting fails (stop-writes-on-bgsave-error option). Please check the sluice logs for details about the snapshot error.\r\n"},
	{"&aofError{err: syscall.ENOSPC}", &aofError{err: syscall.ENOSPC}, "-MISCONF Errors writing to the AOF file: No space left on device\r\n"},
	{"&aofError{err: errors.New(\"short write\")}", &aofError{err: errors.New("short write")}, "-MISCONF Errors writing to the AOF file: short write\r\n"},
}

func TestReplyErrorsGolden(t *testing.T) {
	for _, tc := range goldenReplyErrors {
		if got := string(replyerr.Append(nil, tc.err)); got != tc.wire {
			t.Errorf("%s is written %q; want %q", tc.name, got, tc.wire)
		}
	}
}
