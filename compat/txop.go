package compat

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
