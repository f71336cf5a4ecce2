package compat

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// world runs the same steps on a real Redis and natively, and compares every
// reply and the resulting keys.
//
// Time: the native side runs on a simulated clock (now). Redis's clock is
// real and cannot be set, so before each step every key's TTL on Redis is set
// to what the native side says is left (PEXPIRE), and a key the simulated
// clock has expired is deleted. A gap between steps is thus simulated, not
// slept, and the test takes seconds. Gaps never leave a key with less than
// ttlMargin to live (they are lengthened past its expiry instead), so a key
// cannot expire on Redis while a step runs. TTLs (PTTL, and the reply fields
// that come from PTTL) are compared within the step's measured duration plus
// one millisecond; everything else must be equal.
type world struct {
	t    *testing.T
	srv  *redisServer
	ctx  context.Context
	now  int64           // the simulated instant, unix ns
	keys map[string]*Key // native state of every key the test has used
	sha  map[*Script]string
	// steps, errs and beyond2262 count what ran, for the log.
	steps, errs, beyond2262 int
}

const ttlMargin = 300 * time.Millisecond

func newWorld(t *testing.T, srv *redisServer) *world {
	return &world{
		t: t, srv: srv, ctx: context.Background(),
		now:  time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC).UnixNano(),
		keys: map[string]*Key{}, sha: map[*Script]string{},
	}
}

func (w *world) key(name string) *Key {
	k := w.keys[name]
	if k == nil {
		k = &Key{}
		w.keys[name] = k
	}
	return k
}

// advance moves the simulated clock by at least gap: further if a key would
// be left with less than ttlMargin, until that key has expired.
func (w *world) advance(gap time.Duration) {
	w.now += int64(gap)
	for again := true; again; {
		again = false
		for _, k := range w.keys {
			if ms := k.PTTL(w.now); ms >= 0 && ms < ttlMargin.Milliseconds() {
				w.now += (ms + 1) * int64(time.Millisecond)
				again = true
			}
		}
	}
}

// resync sets Redis's TTLs to the native ones (see world).
func (w *world) resync(pipe redis.Pipeliner) {
	for name, k := range w.keys {
		switch ms := k.PTTL(w.now); {
		case ms == -2:
			pipe.Del(w.ctx, name)
		case ms > 0:
			pipe.PExpire(w.ctx, name, time.Duration(ms)*time.Millisecond)
		}
	}
}

// step is one call of a script: the text Redis runs is the script's, or its
// TIME variant, by EVALSHA (after SCRIPT LOAD) or, with eval, EVAL.
type step struct {
	s    *Script
	keys []string
	argv []string
	ro   bool
	eval bool
}

func (st step) String() string {
	cmd := "EVALSHA"
	if st.eval {
		cmd = "EVAL"
	}
	if st.ro {
		cmd += "_RO"
	}
	return cmd + " " + st.s.Library + " " + st.s.Name + " " + st.s.Versions + " keys=" +
		strconv.Quote(strings.Join(st.keys, ",")) + " argv=" + strconv.Quote(strings.Join(st.argv, ","))
}

// redisText is the text Redis runs for s: its own, or its TIME variant.
func redisText(s *Script) string {
	text, _ := timeVariant(s.Text)
	return text
}

// redisSHA loads the text Redis runs for s and returns its SHA1.
func (w *world) redisSHA(s *Script) string {
	if sha, ok := w.sha[s]; ok {
		return sha
	}
	sha := w.srv.load(w.t, redisText(s))
	w.sha[s] = sha
	return sha
}

// run plays st on both sides and compares.
func (w *world) run(st step) {
	w.t.Helper()
	w.steps++
	sha := w.redisSHA(st.s)

	pipe := w.srv.rdb.Pipeline()
	w.resync(pipe) // from the state before the step

	// native, following Call's contract for repeated names
	call := Call{Now: w.now, ReadOnly: st.ro, Argv: make([][]byte, len(st.argv))}
	for i, a := range st.argv {
		call.Argv[i] = []byte(a)
	}
	for _, name := range st.keys {
		k := *w.key(name)
		k.Written = false
		call.Keys = append(call.Keys, k)
	}
	st.s.Run(&call)
	for i, name := range st.keys {
		if call.Keys[i].Written {
			*w.key(name) = call.Keys[i]
			w.key(name).Written = false
		}
	}

	// Redis
	if _, ok := timeVariant(st.s.Text); ok {
		sec, usec := w.now/1e9, w.now%1e9/1e3
		pipe.Del(w.ctx, timeKey)
		pipe.RPush(w.ctx, timeKey, strconv.FormatInt(sec, 10), strconv.FormatInt(usec, 10))
	}
	args := []any{"EVALSHA", sha, len(st.keys)}
	if st.eval {
		args[0], args[1] = "EVAL", redisText(st.s)
	}
	if st.ro {
		args[0] = args[0].(string) + "_RO"
	}
	for _, k := range st.keys {
		args = append(args, k)
	}
	for _, a := range st.argv {
		args = append(args, a)
	}
	eval := pipe.Do(w.ctx, args...)
	type keyCmds struct {
		name  string
		get   *redis.StringCmd
		pttl  *redis.Cmd
		items *redis.StringSliceCmd
	}
	var kc []keyCmds
	for _, name := range st.keys {
		kc = append(kc, keyCmds{name, pipe.Get(w.ctx, name), pipe.Do(w.ctx, "PTTL", name), pipe.LRange(w.ctx, name, 0, -1)})
	}
	start := time.Now()
	pipe.Exec(w.ctx)
	tol := time.Since(start).Milliseconds() + 1

	got := call.Reply.String()
	want := fromRedis(eval.Result())
	want = strings.ReplaceAll(want, sha, st.s.SHA1)
	if call.Reply.Type == Error {
		w.errs++
	}
	if !w.sameReply(st.s, got, want, tol) {
		w.t.Fatalf("step %d at %s: %s\n native: %s\n redis:  %s", w.steps, time.Unix(0, w.now).UTC().Format(time.RFC3339Nano), st, got, want)
	}
	for _, c := range kc {
		k := w.key(c.name)
		gotV := w.getNative(k)
		wantV := fromRedis(c.get.Result())
		if gotV != wantV && !w.sameFloat(k, wantV) {
			w.t.Fatalf("step %d: %s\n GET %s: native %s, redis %s", w.steps, st, c.name, gotV, wantV)
		}
		if got, want := w.listNative(k), listFromRedis(c.items); got != want {
			w.t.Fatalf("step %d: %s\n LRANGE %s 0 -1: native %s, redis %s", w.steps, st, c.name, got, want)
		}
		gotT := k.PTTL(w.now)
		wantT := pttlMs(c.pttl)
		if gotT < 0 || wantT < 0 {
			if gotT != wantT {
				w.t.Fatalf("step %d: %s\n PTTL %s: native %d, redis %d", w.steps, st, c.name, gotT, wantT)
			}
		} else if k.Expire == NoExpire-1 && wantT >= gotT {
			// beyond the year 2262: Key keeps such expiries as NoExpire-1
			w.beyond2262++
		} else if d := gotT - wantT; d < 0 || d > tol {
			w.t.Fatalf("step %d: %s\n PTTL %s: native %d, redis %d (Redis's clock ran %d ms)", w.steps, st, c.name, gotT, wantT, tol)
		}
	}
}

// pttlMs is PTTL's reply (go-redis's PTTL would convert it to a Duration,
// which overflows for TTLs beyond 292 years).
func pttlMs(c *redis.Cmd) int64 {
	ms, err := c.Int64()
	if err != nil {
		return -3
	}
	return ms
}

// listNative is LRANGE key 0 -1 of k: its elements' strings, an empty
// list for no key, or WRONGTYPE.
func (w *world) listNative(k *Key) string {
	switch {
	case !k.Live(w.now):
		return "[]"
	case k.Value.Kind() != List:
		return "(error) " + ErrWrongType.Error()
	}
	var items []string
	for _, b := range k.List {
		items = append(items, string(NumberValue(math.Float64frombits(uint64(b))).AppendString(nil)))
	}
	return fmt.Sprint(items)
}

func listFromRedis(c *redis.StringSliceCmd) string {
	items, err := c.Result()
	if err != nil {
		return "(error) " + err.Error()
	}
	if items == nil {
		items = []string{}
	}
	return fmt.Sprint(items)
}

func (w *world) getNative(k *Key) string {
	switch {
	case !k.Live(w.now):
		return "(nil)"
	case k.Value.Kind() == Foreign, k.Value.Kind() == List:
		return "(error) " + ErrWrongType.Error()
	}
	return strconv.Quote(string(k.Value.AppendString(nil)))
}

// sameFloat accepts Redis 7.2's shortest form of a number stored by a script
// where 7.0 writes "%.17g".
func (w *world) sameFloat(k *Key, redisGet string) bool {
	if !w.srv.v72 || k.Value.Kind() != Float {
		return false
	}
	s, err := strconv.Unquote(redisGet)
	f, ok := str2d([]byte(s))
	n, _ := k.Value.number()
	return err == nil && ok && (f == n || (f != f && n != n))
}

// ttlInReply reports whether the second integer of s's reply can come
// from PTTL.
func ttlInReply(s *Script) bool {
	switch s.impl {
	case implFlexible, implRLRIncrement, implRLRIncrement5, implRLRIncrement4, implRLRGet, implUluleIncr, implUlulePeek:
		return true
	}
	return false
}

// sameReply compares two replies; integers that come from PTTL may differ
// by up to tol ms (Redis's clock ran on during the step).
func (w *world) sameReply(s *Script, got, want string, tol int64) bool {
	if got == want {
		return true
	}
	if !ttlInReply(s) {
		return false
	}
	g, wt := strings.Fields(strings.Trim(got, "[]")), strings.Fields(strings.Trim(want, "[]"))
	if len(g) != 2 || len(wt) != 2 || g[0] != wt[0] {
		return false
	}
	a, err1 := strconv.ParseInt(g[1], 10, 64)
	b, err2 := strconv.ParseInt(wt[1], 10, 64)
	return err1 == nil && err2 == nil && a >= b && a-b <= tol
}

// del removes name on both sides.
func (w *world) del(name string) {
	w.t.Helper()
	if err := w.srv.rdb.Del(w.ctx, name).Err(); err != nil {
		w.t.Fatal(err)
	}
	*w.key(name) = Key{}
}

// set stores the string v on name on both sides: SET name v PX ms.
func (w *world) set(name, v string, ms int64) {
	w.t.Helper()
	val, ok := StringValue([]byte(v))
	if !ok {
		w.t.Fatalf("%q is not a string a key can hold", v)
	}
	if err := w.srv.rdb.Set(w.ctx, name, v, time.Duration(ms)*time.Millisecond).Err(); err != nil {
		w.t.Fatal(err)
	}
	k := w.key(name)
	k.Set(w.now, val, ms)
	k.Written = false
}

// plain runs a plain command on both sides: the libraries' own GET/SET/
// INCRBY/DECR/DEL on the scripts' keys, and a key of another type.
func (w *world) plain(rng *rand.Rand, name string) {
	w.t.Helper()
	k := w.key(name)
	pipe := w.srv.rdb.Pipeline()
	w.resync(pipe)
	var cmd redis.Cmder
	var native error
	switch rng.IntN(6) {
	case 0: // rate-limiter-flexible's block/set: SET key points EX secs
		secs := 1 + rng.Int64N(5)
		v := IntValue(rng.Int64N(10))
		cmd = pipe.Set(w.ctx, name, string(v.AppendString(nil)), time.Duration(secs)*time.Second)
		k.Set(w.now, v, secs*1000)
	case 1: // rate-limiter-flexible with duration 0: INCRBY (no TTL)
		n := rng.Int64N(5) - 1
		cmd = pipe.IncrBy(w.ctx, name, n)
		_, native = k.IncrBy(w.now, n)
	case 2: // rate-limit-redis's decrement: DECR
		cmd = pipe.Decr(w.ctx, name)
		_, native = k.IncrBy(w.now, -1)
	case 3: // resetKey, delete, Reset: DEL
		cmd = pipe.Del(w.ctx, name)
		*k = Key{}
	case 4: // a string no script writes
		s := oddStrings[rng.IntN(len(oddStrings))]
		v, ok := StringValue([]byte(s))
		if !ok {
			return
		}
		cmd = pipe.Set(w.ctx, name, s, 0)
		k.Set(w.now, v, 0)
	case 5: // a key of another type
		if k.Live(w.now) {
			return
		}
		cmd = pipe.SAdd(w.ctx, name, "x")
		*k = Key{Value: ForeignValue(), Expire: NoExpire}
	}
	k.Written = false
	pipe.Exec(w.ctx)
	if e := cmd.Err(); (e == nil) != (native == nil) || (e != nil && e.Error() != native.Error()) {
		w.t.Fatalf("%s on %s: redis %v, native %v", cmd.Name(), name, e, native)
	}
}

// oddStrings are arguments a library never sends: every number parser and
// error path must still answer as Redis does.
var oddStrings = []string{
	"", "abc", "0", "-0", "-1", "1.5", "0.1", "1e3", "1e+17", " 7", "7 ", "0x10", "0x1p4", "inf",
	"-inf", "nan", "-nan", "007", "+5", "99999999999999999999", "9223372036854775807",
	"-9223372036854775808", "9223372036854775", "4611686018427387904", "1e400", "\t3\n", "3\x00x",
	"0.10000000000000001", "12345678901234567890123",
}

// pick returns one of the odd strings with probability p, else good.
func pick(rng *rand.Rand, p float64, good string) string {
	if rng.Float64() < p {
		return oddStrings[rng.IntN(len(oddStrings))]
	}
	return good
}

// itoa is strconv.FormatInt for the generators.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// runDifferential plays n random steps made by gen, with gaps and plain
// commands in between, over a few key names.
func runDifferential(t *testing.T, n int, names []string, gen func(rng *rand.Rand, w *world, names []string) step) {
	srv := startRedis(t)
	w := newWorld(t, srv)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 16))
	seed := rng.Uint64()
	rng = rand.New(rand.NewPCG(seed, 16))
	t.Logf("seed %d", seed)
	for i := 0; i < n; i++ {
		switch x := rng.IntN(20); {
		case x < 3:
			w.advance(time.Duration(rng.Int64N(int64(3 * time.Second))))
		case x < 4:
			w.plain(rng, names[rng.IntN(len(names))])
		default:
			st := gen(rng, w, names)
			st.eval = rng.IntN(10) == 0
			w.run(st)
			// A step may itself leave a key with less than ttlMargin (a
			// window of "\t3\n" ms is 3 ms to Lua's tonumber): Redis's
			// wall clock would expire it before the next step while the
			// simulated one stands still, so move past its expiry now.
			w.advance(0)
		}
	}
	t.Logf("%d steps, %d of them errors, identical on Redis and natively (%d TTLs beyond 2262 kept as NoExpire-1)", w.steps, w.errs, w.beyond2262)
}
