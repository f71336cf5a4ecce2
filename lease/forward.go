package lease

import (
	"errors"
	"strconv"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/internal/resp"
	"github.com/sluice-rl/sluice/policy"
)

// errNotForwarded is the outcome of a request the tier cannot pass on: an
// RL.ALL group (an RL.CHECK of several pairs), a throttle, a take.
var errNotForwarded = errors.New("ERR not served by a lease tier (--upstream): send RL.ALL, RL.CHECK of several pairs, " +
	"CL.THROTTLE and RL.TAKE to the upstream")

// forward sends the requests of reqs at the indexes idx to the upstream as
// the commands they came from, in one pipeline, and writes their outcomes.
// While the upstream counts as unreachable they fail at once with
// CLUSTERDOWN: nothing was applied.
func (t *Tier) forward(now int64, reqs []algorithms.Request, idx []int, out []algorithms.Outcome) {
	var cmds [][][]byte
	var sent []int
	for _, i := range idx {
		cmd, ok := command(&reqs[i])
		if !ok {
			out[i] = algorithms.Outcome{Err: errNotForwarded}
			continue
		}
		cmds = append(cmds, cmd)
		sent = append(sent, i)
	}
	if len(cmds) == 0 {
		return
	}
	if t.down(now) {
		for _, i := range sent {
			out[i] = algorithms.Outcome{Err: errUnreachable}
		}
		return
	}
	t.st.forwarded.Add(int64(len(cmds)))
	answered := 0
	err := t.up.do(cmds, func(k int, v *resp.Value) error {
		i := sent[k]
		answered = k + 1
		if reqs[i].Limit.Algo == algorithms.Concurrency && reqs[i].N < 0 {
			if v.IsError() {
				out[i] = algorithms.Outcome{Err: errReply(v.Text)}
			} else {
				out[i] = algorithms.Outcome{Result: algorithms.Result{Allowed: v.Num == 1}}
			}
			return nil
		}
		var d [5]int64
		if err := ints(v, d[:]); err != nil {
			var er errReply
			if !errors.As(err, &er) {
				return err
			}
			out[i] = algorithms.Outcome{Err: err}
			return nil
		}
		out[i] = algorithms.Outcome{Result: decision(d[:])}
		return nil
	})
	var ea errAuth
	var ns errNotSent
	if errors.As(err, &ea) || errors.As(err, &ns) { // refused before any command ran (no connection, AUTH, or NOAUTH on the first)
		t.failed(err)
		for _, i := range sent[answered:] {
			out[i] = algorithms.Outcome{Err: errUnreachable}
		}
		return
	}
	if err != nil {
		t.failed(err)
		for _, i := range sent[answered:] {
			// The connection failed: the request may have been applied.
			out[i] = algorithms.Outcome{Err: errors.New("UNKNOWN the upstream did not answer: " + err.Error())}
		}
	}
}

// command is the upstream command that carries out r, if there is one.
func command(r *algorithms.Request) ([][]byte, bool) {
	if r.Group != 0 || r.Min != 0 {
		return nil, false
	}
	n := []byte(strconv.FormatInt(r.N, 10))
	if r.Override != nil { // an RL.CHECK: its policy's name and the subject are in the state key
		name, subject, ok := policy.SplitCheckKey(r.Key)
		if !ok {
			return nil, false
		}
		return [][]byte{[]byte("RL.CHECK"), []byte(name), subject, n}, true
	}
	count := []byte(strconv.FormatInt(r.Limit.Count, 10))
	switch r.Limit.Algo {
	case algorithms.Token:
		return [][]byte{[]byte("RL.TOKEN"), r.Key, rateArg(r.Limit.Period), count, n}, true
	case algorithms.Leaky:
		return [][]byte{[]byte("RL.LEAKY"), r.Key, rateArg(r.Limit.Period), count, n}, true
	case algorithms.Fixed:
		return [][]byte{[]byte("RL.FIXED"), r.Key, count, durationArg(r.Limit.Period), n}, true
	case algorithms.Sliding:
		return [][]byte{[]byte("RL.SLIDING"), r.Key, count, durationArg(r.Limit.Period), n}, true
	case algorithms.Log:
		return [][]byte{[]byte("RL.LOG"), r.Key, count, durationArg(r.Limit.Period), n}, true
	case algorithms.Concurrency:
		switch r.N {
		case algorithms.LeaseAcquire:
			return [][]byte{[]byte("RL.ACQUIRE"), r.Key, count, durationArg(r.Limit.Period), r.ID}, true
		case algorithms.LeaseRelease:
			return [][]byte{[]byte("RL.RELEASE"), r.Key, r.ID}, true
		}
	}
	return nil, false
}
