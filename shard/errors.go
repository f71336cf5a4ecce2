package shard

import "errors"

// The shard's errors, reply errors as the commands write them: a text that
// starts with a Redis error code (OOM), or gets the generic ERR.
var (
	// ErrOOM refuses a new key, or an existing key's record that must
	// grow, when the shard is at its memory limit, in Redis's words.
	ErrOOM = errors.New("OOM command not allowed when used memory > 'maxmemory'.")
	// ErrKeyTooLong refuses a key longer than a record can hold (4 GiB).
	ErrKeyTooLong = errors.New("key too long")
)
