package compat

import "math"

// More plain string commands on one key, with Redis 7.0's arguments,
// replies and errors (t_string.c): SETEX, PSETEX, SETNX and GETDEL. MGET is
// one CmdGet per key, carried out together by the keyspace (a transaction
// of reads), each a null for a key that holds no string.

// The commands' Cmd values, after the key-space ones (txop.go).
const (
	// CmdSetex is SETEX key seconds value.
	CmdSetex Cmd = iota + 48
	// CmdPsetex is PSETEX key milliseconds value.
	CmdPsetex
	// CmdSetnx is SETNX key value: 1 if it was set, 0 if the key exists.
	CmdSetnx
	// CmdGetdel is GETDEL key: the string, then the key is removed.
	CmdGetdel
)

// execMore carries out the commands of this file; it reports false for
// another Cmd.
func execMore(cmd Cmd, k *Key, c *Call) (bool, error) {
	switch cmd {
	case CmdSetex, CmdPsetex:
		return true, plainSetex(k, c, cmd == CmdSetex)
	case CmdSetnx:
		return true, plainSetnx(k, c)
	case CmdGetdel:
		return true, plainGetdel(k, c)
	}
	return false, nil
}

// plainSetex is SETEX key seconds value / PSETEX key ms value: OK. The
// expiry is read first, as Redis reads it.
func plainSetex(k *Key, c *Call, seconds bool) error {
	if len(c.Argv) != 2 {
		return ErrSyntax
	}
	invalid := ErrExpirePsetex
	if seconds {
		invalid = ErrExpireSetex
	}
	ms, ok := string2ll(c.Argv[0])
	if !ok {
		return ErrNotInteger
	}
	if ms <= 0 || (seconds && ms > math.MaxInt64/1000) {
		return invalid
	}
	if seconds {
		ms *= 1000
	}
	if ms > math.MaxInt64-unixMs(c.Now) {
		return invalid
	}
	v, ok := StringValue(c.Argv[1])
	if !ok {
		return ErrValueTooLong
	}
	k.Value, k.Expire, k.Written = v, expireAtMs(unixMs(c.Now)+ms), true
	c.Reply.Type = OK
	return nil
}

// plainSetnx is SETNX key value: 1 if the key was absent and is now set
// (with no TTL), else 0.
func plainSetnx(k *Key, c *Call) error {
	if len(c.Argv) != 1 {
		return ErrSyntax
	}
	v, ok := StringValue(c.Argv[0])
	if !ok {
		return ErrValueTooLong
	}
	c.Reply.Type = Integer
	if k.Live(c.Now) {
		return nil
	}
	k.Value, k.Expire, k.Written = v, NoExpire, true
	c.Reply.Int = 1
	return nil
}

// plainGetdel is GETDEL key: the string (nil if absent), and the key is
// removed; WRONGTYPE, removing nothing, if it holds a limiter's state.
func plainGetdel(k *Key, c *Call) error {
	if err := plainGet(k, c); err != nil {
		return err
	}
	if k.Live(c.Now) {
		k.Value, k.Expire, k.Written = Value{}, 0, true
	}
	return nil
}
