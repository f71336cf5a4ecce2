package commands

import (
	"bytes"
	"testing"

	"github.com/sluice-rl/sluice/algorithms"
)

// FuzzParseTake: RL.TAKE's arguments are a parser's input. No bytes may
// make it panic, and whatever it accepts is a take the keyspace can carry
// out: a leasable algorithm with a valid limit, 1 ≤ Min ≤ N, and the key
// it was given.
func FuzzParseTake(f *testing.F) {
	f.Add("k", "TOKEN", "1000/s", "100", "50", "MIN", "1")
	f.Add("k", "fixed", "10", "1s", "7", "", "")
	f.Add("k", "LEAKY", "10/s", "5", "5", "", "")
	f.Add("k", "token", "0.5", "9223372036854775807", "9223372036854775807", "min", "9223372036854775807")
	f.Add("", "TOKEN", "1/ms", "1", "-1", "MIN", "0")
	f.Fuzz(func(t *testing.T, key, algo, p1, p2, maxArg, tok, minArg string) {
		args := [][]byte{[]byte("RL.TAKE"), []byte(key), []byte(algo), []byte(p1), []byte(p2), []byte(maxArg)}
		if tok != "" || minArg != "" {
			args = append(args, []byte(tok), []byte(minArg))
		}
		req, err := parseTake(args)
		if err != nil {
			return
		}
		l := req.Limit
		if !algorithms.Leasable(l.Algo) || l.Count < 1 || l.Period < 1 {
			t.Fatalf("accepted %q as limit %+v", args, l)
		}
		if l.Algo == algorithms.Token && !algorithms.RefillFits(l.Count, l.Period) {
			t.Fatalf("accepted %q: the bucket does not fit", args)
		}
		if req.Min < 1 || req.Min > req.N || !bytes.Equal(req.Key, []byte(key)) || req.Group != 0 || req.Override != nil {
			t.Fatalf("accepted %q as %+v", args, req)
		}
		if len(args) == 8 && !bytes.EqualFold(args[6], []byte("min")) {
			t.Fatalf("accepted %q with %q in MIN's place", args, args[6])
		}
	})
}
