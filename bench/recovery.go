package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/internal/resp"
)

// A recovery trial: a fresh group is loaded with keys, optionally every
// node takes a snapshot (RAFT.SNAPSHOT), a tenth more decisions follow so
// that a restart also replays log entries, and last one decision on a
// sentinel key. A follower is killed with SIGKILL and started again on its
// --dir; the trial times its start to its RESP port answering, to its
// applied_index (INFO replication) reaching the leader's, and to the
// sentinel's decision showing in its own replica (a READONLY peek): the
// log is applied in order, so then the whole state is there. It then counts
// the keys the node holds (SCAN on its own replica).
//
// The last two differ: raft's applied index, which INFO reports, moves when
// entries are handed to the state machine's goroutine, before they are
// applied.

const (
	loadConns     = 8
	loadBatch     = 500
	recoveryLimit = 2 * time.Minute
)

type recoveryResult struct {
	snapshot   bool
	keys       int
	snapshots  int   // snapshots on the follower's disk when it restarted
	snapBytes  int64 // their size
	logBytes   int64 // the log's size: raft.db, or raft-wal's wal/ (its segments preallocated)
	target     int64 // the leader's applied_index
	listening  time.Duration
	caughtUp   time.Duration // applied_index reached target
	stateAt    time.Duration // the sentinel showed in the node's replica
	keysAtIdx  int64         // keys in the replica (SCAN) when applied_index reached target
	localKeys  int64         // keys in the replica once the sentinel showed
	elections  int64         // term changes while the follower restarted
	down       time.Duration
	loadedRate float64 // decisions/s while loading
}

func (r *recoveryResult) String() string {
	kind := "log only"
	if r.snapshot {
		kind = "snapshot + log"
	}
	return fmt.Sprintf("%s: %d keys (loaded at %.0f/s), down %s, %d snapshot(s) of %s, log %s, leader applied_index %d; "+
		"RESP port answered after %s, applied_index caught up after %s (replica then held %d keys), "+
		"last decision in its replica after %s (%d keys); elections %d",
		kind, r.keys, r.loadedRate, r.down, r.snapshots, fmtBytes(r.snapBytes), fmtBytes(r.logBytes), r.target,
		fmtDur(r.listening), fmtDur(r.caughtUp), r.keysAtIdx, fmtDur(r.stateAt), r.localKeys, r.elections)
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d B", n)
	}
}

func recoveryTrial(ctx context.Context, cfg groupConfig, keys int, snapshot bool, down time.Duration) (*recoveryResult, error) {
	g, leader, err := startGroup(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer g.stop()
	res := &recoveryResult{snapshot: snapshot, keys: keys, down: down}
	t := time.Now()
	if err := loadKeys(leader.resp, 0, keys); err != nil {
		return nil, err
	}
	res.loadedRate = float64(keys) / time.Since(t).Seconds()
	if snapshot {
		for _, m := range g.members {
			if v, err := (&server{addr: m.resp}).call(time.Minute, "RAFT.SNAPSHOT"); err != nil || v.IsError() {
				return nil, fmt.Errorf("RAFT.SNAPSHOT on %s: %v %s", m.id, err, describeMaybe(v))
			}
		}
	}
	if err := loadKeys(leader.resp, 0, max(keys/10, 1)); err != nil {
		return nil, err
	}
	if v, err := (&server{addr: leader.resp}).call(5*time.Second, sentinelCmd(1)...); err != nil || !sentinelSays(v) {
		return nil, fmt.Errorf("the sentinel decision: %v %s", err, describeMaybe(v))
	}
	victim := g.followers(leader)[0]
	if err := waitSentinel(ctx, victim, 30*time.Second); err != nil {
		return nil, fmt.Errorf("%s before the kill: %w", victim.id, err)
	}
	g.crash(victim)
	select {
	case <-time.After(down):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	res.snapshots, res.snapBytes = dirUsage(filepath.Join(victim.dir, "raft", "snapshots"))
	_, bolt := dirUsage(filepath.Join(victim.dir, "raft", "raft.db"))
	_, wal := dirUsage(filepath.Join(victim.dir, "raft", "wal"))
	res.logBytes = bolt + wal
	li, err := leader.info(2 * time.Second)
	if err != nil {
		return nil, err
	}
	res.target = li.int("applied_index")
	term0 := li.int("term")

	t0 := time.Now()
	s, err := g.spawnMember(victim)
	if err != nil {
		return nil, err
	}
	var peek *peeker
	defer func() { peek.close() }()
	type scanResult struct {
		n   int64
		err error
	}
	scanned := make(chan scanResult, 1)
	for res.caughtUp == 0 || res.stateAt == 0 {
		select {
		case <-s.done:
			return nil, fmt.Errorf("%s exited during its recovery; log:\n%s", victim.id, tail(s.log))
		case <-ctx.Done():
			return nil, ctx.Err()
		default:
		}
		if time.Since(t0) > recoveryLimit {
			return nil, fmt.Errorf("%s did not catch up within %v", victim.id, recoveryLimit)
		}
		if peek == nil {
			if peek, err = newPeeker(victim.resp); err != nil {
				time.Sleep(time.Millisecond)
				continue
			}
			res.listening = time.Since(t0)
		}
		if res.stateAt == 0 {
			ok, err := peek.sentinel()
			if err != nil {
				return nil, fmt.Errorf("peek on %s: %w", victim.id, err)
			}
			if ok {
				res.stateAt = time.Since(t0)
			}
		}
		if res.caughtUp == 0 {
			if r, err := victim.info(time.Second); err == nil && r.int("applied_index") >= res.target {
				res.caughtUp = time.Since(t0)
				// Counted beside the sentinel's polling, so as not to delay it.
				go func() {
					n, err := scanCount(victim.resp, 4*keys+1000)
					scanned <- scanResult{n, err}
				}()
			}
		}
		time.Sleep(time.Millisecond)
	}
	sc := <-scanned
	if sc.err != nil {
		return nil, fmt.Errorf("SCAN on %s: %w", victim.id, sc.err)
	}
	res.keysAtIdx = sc.n
	if li, err = leader.info(2 * time.Second); err == nil {
		res.elections = li.int("term") - term0
	}
	res.localKeys, err = scanCount(victim.resp, 4*keys+1000)
	if err != nil {
		return nil, fmt.Errorf("SCAN on %s after its recovery: %w", victim.id, err)
	}
	return res, nil
}

func describeMaybe(v *resp.Value) string {
	if v == nil {
		return ""
	}
	return v.String()
}

// The sentinel: one decision written after everything else.
func sentinelCmd(n int) []string {
	return []string{"RL.TOKEN", "rk:sentinel", "1/h", "100", strconv.Itoa(n)}
}

// sentinelSays reports whether v is the sentinel's state after its one
// decision: admitted (a take) or seen (a peek), 99 of 100 left.
func sentinelSays(v *resp.Value) bool {
	allowed, bad := checkDecision(workload{capacity: 100}, v)
	return bad == "" && allowed == 1 && v.Elems[2].Num == 99
}

// peeker reads the sentinel from one node's own replica (READONLY).
type peeker struct {
	conn net.Conn
	br   *bufio.Reader
	v    resp.Value
}

func newPeeker(addr string) (*peeker, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	p := &peeker{conn: conn, br: bufio.NewReader(conn)}
	if err := p.do("READONLY"); err != nil || p.v.Kind != '+' {
		conn.Close()
		return nil, fmt.Errorf("READONLY: %v %s", err, p.v.String())
	}
	return p, nil
}

func (p *peeker) do(args ...string) error {
	p.conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := p.conn.Write(resp.AppendCommand(nil, args...)); err != nil {
		return err
	}
	return resp.Read(p.br, &p.v)
}

// sentinel reports whether the node's replica has the sentinel's decision.
func (p *peeker) sentinel() (bool, error) {
	if err := p.do(sentinelCmd(0)...); err != nil {
		return false, err
	}
	if _, bad := checkDecision(workload{capacity: 100}, &p.v); bad != "" {
		return false, fmt.Errorf("%s", bad)
	}
	return sentinelSays(&p.v), nil
}

func (p *peeker) close() {
	if p != nil {
		p.conn.Close()
	}
}

// waitSentinel waits until m's replica has the sentinel's decision.
func waitSentinel(ctx context.Context, m *member, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	p, err := newPeeker(m.resp)
	if err != nil {
		return err
	}
	defer p.close()
	for {
		ok, err := p.sentinel()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the sentinel did not show within %v", limit)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// loadKeys takes a token from each of the keys rk:<from>…rk:<to-1> through
// addr (one hour to refill, so they stay), over pipelined connections, and
// checks that every decision was admitted.
func loadKeys(addr string, from, to int) error {
	var wg sync.WaitGroup
	errs := make(chan error, loadConns)
	per := (to - from + loadConns - 1) / loadConns
	for c := 0; c < loadConns; c++ {
		lo, hi := from+c*per, min(from+(c+1)*per, to)
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := loadRange(addr, lo, hi); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func loadRange(addr string, lo, hi int) error {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	br := bufio.NewReaderSize(conn, 64<<10)
	var out []byte
	var v resp.Value
	w := workload{capacity: 100}
	for k := lo; k < hi; k += loadBatch {
		n := min(loadBatch, hi-k)
		out = out[:0]
		for i := 0; i < n; i++ {
			out = resp.AppendCommand(out, "RL.TOKEN", string(appendKey(nil, "rk:", uint64(k+i))), "1/h", "100", "1")
		}
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := conn.Write(out); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if err := resp.Read(br, &v); err != nil {
				return err
			}
			if allowed, bad := checkDecision(w, &v); bad != "" || allowed != 1 {
				return fmt.Errorf("loading rk:%d: want an admitted decision, got %s", k+i, v.String())
			}
		}
	}
	return nil
}

// scanCount counts the keys of the node at addr with SCAN, which reads the
// node's own replica. At most limit keys are counted.
func scanCount(addr string, limit int) (int64, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	br := bufio.NewReaderSize(conn, 64<<10)
	cursor := "0"
	var n int64
	var v resp.Value
	for i := 0; i < limit/1000+100; i++ {
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := conn.Write(resp.AppendCommand(nil, "SCAN", cursor, "COUNT", "10000")); err != nil {
			return 0, err
		}
		if err := resp.Read(br, &v); err != nil {
			return 0, err
		}
		if v.Kind != '*' || len(v.Elems) != 2 || v.Elems[0].Kind != '$' || v.Elems[1].Kind != '*' {
			return 0, fmt.Errorf("SCAN: want [cursor, keys], got %s", v.String())
		}
		n += int64(len(v.Elems[1].Elems))
		cursor = string(v.Elems[0].Text)
		if cursor == "0" {
			return n, nil
		}
	}
	return n, fmt.Errorf("SCAN did not finish within %d calls", limit/1000+100)
}

// dirUsage returns how many entries dir holds and their total size in
// bytes (a file: 1 and its size).
func dirUsage(path string) (int, int64) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, 0
	}
	if !st.IsDir() {
		return 1, st.Size()
	}
	entries, _ := os.ReadDir(path)
	var size int64
	filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				size += info.Size()
			}
		}
		return nil
	})
	return len(entries), size
}

func printRecoverySummary(w io.Writer, rs []*recoveryResult) {
	for _, snap := range []bool{true, false} {
		var listen, caught, state []time.Duration
		var kind string
		var last *recoveryResult
		for _, r := range rs {
			if r.snapshot == snap {
				listen = append(listen, r.listening)
				caught = append(caught, r.caughtUp)
				state = append(state, r.stateAt)
				last = r
			}
		}
		if last == nil {
			continue
		}
		kind = "log only"
		if snap {
			kind = "snapshot + log"
		}
		m1, lo1, hi1 := medianDur(listen)
		m2, lo2, hi2 := medianDur(caught)
		m3, lo3, hi3 := medianDur(state)
		fmt.Fprintf(w, "recovery, %s, %s keys, down %s, over %d trials: RESP port answering: median %s (min %s, max %s); "+
			"applied_index equal to the leader's: median %s (min %s, max %s); the last decision in its replica: "+
			"median %s (min %s, max %s)\n",
			kind, strconv.Itoa(last.keys), last.down, len(listen), fmtDur(m1), fmtDur(lo1), fmtDur(hi1),
			fmtDur(m2), fmtDur(lo2), fmtDur(hi2), fmtDur(m3), fmtDur(lo3), fmtDur(hi3))
	}
}
