package commands

import "github.com/sluice-rl/sluice/algorithms"

// RL.INFO and RL.RESET: look at a limiter's state, and put limiters back to
// their initial state.

func init() {
	register(
		&command{
			name: "rl.info", arity: 2, flags: flagReadOnly | flagFast, run: cmdRLInfo,
			group: "rate-limit", since: "0.1.0", complexity: "O(1), O(N) for a log or leases of N entries",
			summary:   "Shows a key's limiter state: algorithm, expiry and the raw state fields; nil if absent.",
			arguments: []argDoc{{name: "key", typ: "key"}},
			firstKey:  1, lastKey: 1, keyStep: 1,
		},
		&command{
			name: "rl.reset", arity: -2, flags: flagWrite, run: cmdRLReset,
			group: "rate-limit", since: "0.1.0", complexity: "O(N) where N is the number of keys",
			summary:   "Puts limiters back to their initial state (deletes their state); replies how many had one.",
			arguments: []argDoc{{name: "key", typ: "key", multiple: true}},
			firstKey:  1, lastKey: -1, keyStep: 1,
		},
	)
}

// cmdRLInfo: RL.INFO key
func cmdRLInfo(c *Client, args [][]byte) {
	// operation
	info, err := c.srv.ks.Info(c.now, args[1])
	if err != nil {
		c.writeError(err)
		return
	}
	// reply: nil, or a map (a flat array in RESP2) of algorithm, expire_at_ns,
	// ttl_ms and the algorithm's own fields
	if info.Algo == algorithms.None {
		c.writeNull()
		return
	}
	c.writeMap(3 + len(info.Fields))
	c.writeBulkString("algorithm")
	c.writeBulkString(info.Algo.String())
	c.writeBulkString("expire_at_ns")
	c.writeInt(info.Expire)
	c.writeBulkString("ttl_ms")
	c.writeInt(ceilMillis(info.Expire - c.now))
	for _, f := range info.Fields {
		c.writeBulkString(f.Name)
		switch {
		case f.List == nil:
			c.writeInt(f.Value)
		case f.Pairs:
			c.writeArray(len(f.List) / 2)
			for i := 0; i+1 < len(f.List); i += 2 {
				c.writeArray(2)
				c.writeInt(f.List[i])
				c.writeInt(f.List[i+1])
			}
		default:
			c.writeArray(len(f.List))
			for _, v := range f.List {
				c.writeInt(v)
			}
		}
	}
}

// cmdRLReset: RL.RESET key [key …]
func cmdRLReset(c *Client, args [][]byte) {
	n, err := c.srv.ks.Delete(c.now, args[1:])
	c.replyInt(n, err)
}
