package lease

import (
	"errors"
	"fmt"
	"math"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/compat"
	"github.com/sluice-rl/sluice/internal/resp"
)

// The rest of commands.Keyspace: the key-space commands are forwarded
// (DEL, EXISTS, TYPE, PTTL, DBSIZE, FLUSHALL), dropping the leased stock
// of what they delete; scripts, string commands, transactions, SCAN,
// RL.INFO and overrides are refused with errNotServed, to be sent to the
// upstream itself.

var errNotServed = errors.New("ERR not served by a lease tier (--upstream): send it to the upstream")

// Delete forwards DEL; the stock of deleted keys is dropped, not returned.
func (t *Tier) Delete(now int64, keys [][]byte) (int64, error) {
	t.drop(keys)
	return t.intCommand(now, append([][]byte{[]byte("DEL")}, keys...))
}

// Exists forwards EXISTS.
func (t *Tier) Exists(now int64, keys [][]byte) (int64, error) {
	return t.intCommand(now, append([][]byte{[]byte("EXISTS")}, keys...))
}

// DBSize forwards DBSIZE.
func (t *Tier) DBSize(now int64) (int64, error) {
	return t.intCommand(now, [][]byte{[]byte("DBSIZE")})
}

// Flush forwards FLUSHALL; every stock is dropped.
func (t *Tier) Flush(now int64) error {
	t.mu.Lock()
	for k, s := range t.stocks {
		s.mu.Lock()
		s.gone, s.have = true, 0
		s.mu.Unlock()
		delete(t.stocks, k)
	}
	t.mu.Unlock()
	_, err := t.simple(now, [][]byte{[]byte("FLUSHALL")})
	return err
}

// TTL forwards PTTL.
func (t *Tier) TTL(now int64, key []byte) (int64, error) {
	ms, err := t.intCommand(now, [][]byte{[]byte("PTTL"), key})
	switch {
	case err != nil:
		return 0, err
	case ms == -2:
		return -1, nil
	case ms == -1:
		return math.MaxInt64, nil
	}
	return ms * 1e6, nil
}

// Type forwards TYPE.
func (t *Tier) Type(now int64, key []byte) (algorithms.Algo, error) {
	name, err := t.simple(now, [][]byte{[]byte("TYPE"), key})
	if err != nil {
		return algorithms.None, err
	}
	for a := algorithms.None; a <= algorithms.Override; a++ {
		if a.String() == name {
			return a, nil
		}
	}
	return algorithms.None, nil
}

// drop forgets the stock of keys under any limit.
func (t *Tier) drop(keys [][]byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, s := range t.stocks {
		for _, key := range keys {
			if k.key == string(key) {
				s.mu.Lock()
				s.gone, s.have = true, 0
				s.mu.Unlock()
				delete(t.stocks, k)
			}
		}
	}
}

func (t *Tier) intCommand(now int64, cmd [][]byte) (int64, error) {
	var n int64
	err := t.call(now, cmd, func(v *resp.Value) error {
		if !v.IsInt() {
			return fmt.Errorf("unexpected reply %s", v.String())
		}
		n = v.Num
		return nil
	})
	return n, err
}

func (t *Tier) simple(now int64, cmd [][]byte) (string, error) {
	var s string
	err := t.call(now, cmd, func(v *resp.Value) error {
		s = string(v.Text)
		return nil
	})
	return s, err
}

// call sends one command and hands its reply to fn; an error reply comes
// back as the error, a failed connection as CLUSTERDOWN.
func (t *Tier) call(now int64, cmd [][]byte, fn func(v *resp.Value) error) error {
	if t.down(now) {
		return errUnreachable
	}
	var replyErr error
	err := t.up.do([][][]byte{cmd}, func(_ int, v *resp.Value) error {
		if v.IsError() {
			replyErr = errReply(v.Text)
			return nil
		}
		return fn(v)
	})
	if err != nil {
		t.failed(err)
		return errUnreachable
	}
	return replyErr
}

// Scan is refused: the upstream's keys are scanned on the upstream.
func (t *Tier) Scan(int64, uint64, int, func([]byte, algorithms.Algo) bool) (uint64, error) {
	return 0, errNotServed
}

// Info is refused (RL.INFO).
func (t *Tier) Info(int64, []byte) (algorithms.KeyInfo, error) {
	return algorithms.KeyInfo{}, errNotServed
}

// Exec is refused: scripts and string commands run on the upstream.
func (t *Tier) Exec(_ int64, _ compat.Op, _ [][]byte, c *compat.Call) {
	c.Reply = compat.ErrorReply(errNotServed)
}

// ExecBatch is refused, each op's reply the refusal.
func (t *Tier) ExecBatch(_ int64, ops []compat.TxOp, _ *compat.Call) {
	for i := range ops {
		ops[i].Reply = compat.ErrorReply(errNotServed)
	}
}

// Sweep has nothing to do: leases end in the tier's own loop.
func (t *Tier) Sweep(int64) {}

// Version is refused (WATCH).
func (t *Tier) Version(int64, []byte) (uint64, error) { return 0, errNotServed }

// Transact is refused (MULTI/EXEC).
func (t *Tier) Transact(int64, []algorithms.Watch, []algorithms.Request, []algorithms.Outcome, []compat.TxOp) (bool, error) {
	return false, errNotServed
}

// SetOverride is refused (RL.OVERRIDE SET).
func (t *Tier) SetOverride(int64, []byte, [3]int64) (bool, error) { return false, errNotServed }

// LocalOverride finds none: overrides live on the upstream.
func (t *Tier) LocalOverride(int64, []byte) ([3]int64, bool) { return [3]int64{}, false }

// Stats are INFO leases' figures.
type Stats struct {
	Upstream                     string
	UpstreamUp                   bool
	Fallback                     string
	Keys                         int   // leased keys
	HotKeys                      int   // keys chosen hot (--upstream-lease-hot), 0 without
	Stock                        int64 // tokens held, unspent
	LastBatch                    int64
	Refills, RefillUnits         int64
	Returns, ReturnedUnits       int64
	LapsedUnits                  int64
	UpstreamErrors               int64
	LocalDecisions, SyncTakes    int64
	FallbackDecisions, Forwarded int64
}

// Stats returns the tier's figures now.
func (t *Tier) Stats() Stats {
	s := Stats{Upstream: t.cfg.Upstream, UpstreamUp: !t.down(now()), Fallback: t.cfg.Fallback.String(),
		LastBatch: t.st.lastBatch.Load(), Refills: t.st.refills.Load(), RefillUnits: t.st.refillUnits.Load(),
		Returns: t.st.returns.Load(), ReturnedUnits: t.st.returnedUnits.Load(), LapsedUnits: t.st.lapsedUnits.Load(),
		UpstreamErrors: t.st.upstreamErrors.Load(), LocalDecisions: t.st.localDecisions.Load(),
		SyncTakes: t.st.syncTakes.Load(), FallbackDecisions: t.st.fallbackDecisions.Load(), Forwarded: t.st.forwarded.Load()}
	if t.hot != nil {
		s.HotKeys = t.hot.size()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s.Keys = len(t.stocks)
	for _, st := range t.stocks {
		st.mu.Lock()
		s.Stock += st.have
		st.mu.Unlock()
	}
	return s
}
