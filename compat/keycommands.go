package compat

import (
	"math"

	"github.com/sluice-rl/sluice/internal/parse"
)

// The key-space commands a transaction (MULTI/EXEC) may hold besides the
// decisions and the Ops Exec carries out. Exec does not carry them out:
// they need the kinds of state only a keyspace knows (a limiter's
// algorithm, an entry's expiry), so the keyspace answers them itself, with
// the reply an Integer (see each Cmd). They are Cmd values so that a
// transaction's commands are one list of Ops, and a replicated group's log
// carries them like any Op.
const (
	// CmdDel is DEL key [key ...]: the number of keys removed.
	CmdDel Cmd = iota + 32
	// CmdExists is EXISTS key [key ...]: the number of live keys named.
	CmdExists
	// CmdType is TYPE key: the key's algorithms.Algo as an integer (0 for
	// none), which the caller names.
	CmdType
	// CmdTTL is TTL or PTTL key: the nanoseconds until the key expires, -1
	// if absent, math.MaxInt64 if it has no TTL; the caller rounds.
	CmdTTL
	// CmdMget is MGET's part for one key: GET, with a null for a key that
	// holds no string (Redis's MGET never answers WRONGTYPE).
	CmdMget
)

// KeySpace reports whether cmd is one of the key-space commands that the
// keyspace answers itself (CmdDel, CmdExists, CmdType, CmdTTL).
func (cmd Cmd) KeySpace() bool { return cmd >= CmdDel && cmd <= CmdTTL }

// Writes reports whether an Op of cmd may change its keys.
func (cmd Cmd) Writes() bool {
	switch cmd {
	case CmdGet, CmdExists, CmdType, CmdTTL, CmdMget:
		return false
	}
	return true
}

// TxOp is one command of a transaction other than a decision: op on Keys
// with Argv (the arguments after the keys), carried out after the
// transaction's decisions before index Before and ahead of the rest. The
// keyspace leaves its reply in Reply. Keys and Argv are the caller's and
// are not kept.
type TxOp struct {
	Before     int
	Op         Op
	Keys, Argv [][]byte
	Reply      Reply
}

// More plain string commands on one key, with Redis 7.0's arguments,
// replies and errors (t_string.c): SETEX, PSETEX, SETNX and GETDEL. MGET is
// one CmdGet per key, carried out together by the keyspace (a transaction
// of reads), each a null for a key that holds no string.

// The commands' Cmd values, after the key-space ones (above).
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
	ms, ok := parse.Int(c.Argv[0])
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
