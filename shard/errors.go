package shard

import "github.com/sluice-rl/sluice/internal/replyerr"

// The shard's errors, reply errors of the one vocabulary (internal/replyerr).
var (
	// ErrOOM refuses a new key, or an existing key's record that must
	// grow, when the shard is at its memory limit, in Redis's words.
	ErrOOM = replyerr.New(replyerr.OOM, "command not allowed when used memory > 'maxmemory'.")
	// ErrKeyTooLong refuses a key longer than a record can hold (4 GiB).
	ErrKeyTooLong = replyerr.Generic("key too long")
)
