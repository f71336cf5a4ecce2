package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A tiny RESP server that answers what a test tells it to, to show that the
// generator reports wrong replies, error replies and broken connections,
// and reloads a script after NOSCRIPT.

type fakeServer struct {
	ln      net.Listener
	answer  func(n int64, args []string) (reply string, hangUp bool)
	count   atomic.Int64
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
	scripts atomic.Int64 // SCRIPT LOAD calls
}

func startFake(t *testing.T, answer func(n int64, args []string) (string, bool)) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{ln: ln, answer: answer}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.conns = append(f.conns, c)
			f.mu.Unlock()
			f.wg.Add(1)
			go func() { defer f.wg.Done(); f.serve(c) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		f.mu.Lock()
		for _, c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

func (f *fakeServer) addr() string { return f.ln.Addr().String() }

func (f *fakeServer) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		args, err := readFakeCommand(r)
		if err != nil {
			return
		}
		var reply string
		hangUp := false
		switch strings.ToUpper(args[0]) {
		case "INFO", "DBSIZE":
			reply = "-ERR not in this fake\r\n"
		case "SCRIPT":
			f.scripts.Add(1)
			reply = "$40\r\n" + scriptSHA(args[2]) + "\r\n"
		default:
			reply, hangUp = f.answer(f.count.Add(1), args)
		}
		// A NUL in a reply splits it into writes a millisecond apart, so
		// that the client reads it in parts.
		for i, part := range strings.Split(reply, "\x00") {
			if i > 0 {
				time.Sleep(time.Millisecond)
			}
			if _, err := io.WriteString(c, part); err != nil {
				return
			}
		}
		if hangUp {
			return
		}
	}
}

// readFakeCommand reads one RESP array of bulk strings.
func readFakeCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || line[0] != '*' {
		return nil, io.ErrUnexpectedEOF
	}
	args := make([]string, n)
	for i := range args {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args[i] = string(buf[:size])
	}
	return args, nil
}

// fakeDrivers are the closed loop's two drivers: a goroutine per
// connection (drive) and one epoll set for all (driveEpoll, where the
// platform has it).
var fakeDrivers = []struct {
	name    string
	oneLoop bool
}{{"goroutines", false}, {"one loop", true}}

// eachDriver runs test once with each of fakeDrivers.
func eachDriver(t *testing.T, test func(t *testing.T, oneLoop bool)) {
	for _, d := range fakeDrivers {
		t.Run(d.name, func(t *testing.T) { test(t, d.oneLoop) })
	}
}

// runFake runs a scenario for a short while against the fake server, with
// a goroutine per connection.
func runFake(t *testing.T, f *fakeServer, sc *scenario) *result {
	t.Helper()
	return runFakeWith(t, f, sc, false)
}

// runFakeWith is runFake with the driver oneLoop chooses.
func runFakeWith(t *testing.T, f *fakeServer, sc *scenario, oneLoop bool) *result {
	t.Helper()
	spec := runSpec{group: groupOwn, sc: sc, conns: 2, depth: 4, keys: 100, duration: 200 * time.Millisecond,
		warmup: 0, w: testWorkload, oneLoop: oneLoop}
	res, err := execute(context.Background(), spec, map[string]*target{sc.server: {kind: sc.server, addr: f.addr()}})
	if err != nil {
		t.Fatalf("execute %s: %v", sc.name, err)
	}
	if res.skipped != "" {
		t.Fatalf("%s skipped: %s", sc.name, res.skipped)
	}
	return res
}

var testWorkload = workload{rate: "10", capacity: 100, window: 10, cost: 1}

// assertReported checks that a run counted errors, and that the report
// quotes want in an example.
func assertReported(t *testing.T, res *result, want string) {
	t.Helper()
	if res.t.errors == 0 {
		t.Fatalf("%s: 0 errors reported; want the wrong replies counted (ok=%d)", res.spec.sc.name, res.t.ok)
	}
	var examples []string
	for _, p := range res.t.sortedProblems() {
		examples = append(examples, p.example)
	}
	if !strings.Contains(strings.Join(examples, "\n"), want) {
		t.Fatalf("%s: problems %q; want an example containing %q", res.spec.sc.name, examples, want)
	}
	var text strings.Builder
	rep := &report{results: []*result{res}}
	rep.printProblems(&text, "")
	if !strings.Contains(text.String(), want) {
		t.Fatalf("report does not show the problem %q:\n%s", want, text.String())
	}
}

func TestFakeWrongReplies(t *testing.T) {
	cases := []struct {
		name     string
		scenario string
		reply    string
		want     string
	}{
		{"PING answered with an integer", "sluice-ping", ":1\r\n", "want +PONG, got :1"},
		{"decision with two fields", "sluice-token", "*2\r\n:1\r\n:2\r\n", "got *2[:1 :2]"},
		{"remaining above the limit", "sluice-token", "*5\r\n:1\r\n:100\r\n:200\r\n:0\r\n:0\r\n", ":200"},
		{"limit not the capacity", "sluice-token", "*5\r\n:1\r\n:7\r\n:1\r\n:0\r\n:0\r\n", ":7"},
		{"denied without a retry time", "sluice-token", "*5\r\n:0\r\n:100\r\n:0\r\n:0\r\n:5\r\n", "retry_after_ms -1 or >0"},
		{"decision as bulk strings", "sluice-token", "*5\r\n$1\r\n1\r\n:100\r\n:1\r\n:0\r\n:0\r\n", `"1"`},
		{"error reply", "sluice-token", "-ERR boom\r\n", "error reply: -ERR boom"},
		{"null for INCR", "redis-incr", "$-1\r\n", "got null bulk"},
		{"Lua token bucket with tokens above capacity", "redis-lua-token", "*2\r\n:1\r\n:101\r\n", ":101"},
		{"Lua fixed window admitting over the limit", "redis-lua-fixed", "*2\r\n:1\r\n:101\r\n", ":101"},
		{"not RESP at all", "sluice-ping", "?what\r\n", "unknown reply type"},
	}
	eachDriver(t, func(t *testing.T, oneLoop bool) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				f := startFake(t, func(int64, []string) (string, bool) { return tc.reply, false })
				res := runFakeWith(t, f, findScenario(tc.scenario), oneLoop)
				assertReported(t, res, tc.want)
				if res.t.ok != 0 {
					t.Fatalf("ok = %d; want every wrong reply counted as an error, none as a success", res.t.ok)
				}
			})
		}
	})
}

func TestFakeSomeRepliesWrong(t *testing.T) {
	eachDriver(t, func(t *testing.T, oneLoop bool) {
		good := "*5\r\n:1\r\n:100\r\n:99\r\n:0\r\n:100\r\n"
		f := startFake(t, func(n int64, _ []string) (string, bool) {
			if n%10 == 0 {
				return "*5\r\n:1\r\n:100\r\n:-1\r\n:0\r\n:100\r\n", false // negative remaining
			}
			return good, false
		})
		res := runFakeWith(t, f, findScenario("sluice-token"), oneLoop)
		assertReported(t, res, ":-1")
		total := res.t.ok + res.t.errors
		if res.t.ok == 0 || res.t.errors < total/20 || res.t.errors > total/5 {
			t.Fatalf("ok=%d errors=%d; want about one error in ten", res.t.ok, res.t.errors)
		}
	})
}

// A reply that arrives in parts, split inside an integer, is read whole,
// and the next request waits for it.
func TestFakeRepliesSplitAcrossReads(t *testing.T) {
	eachDriver(t, func(t *testing.T, oneLoop bool) {
		f := startFake(t, func(int64, []string) (string, bool) {
			return "*5\r\n:1\r\n:10\x000\r\n:99\r\n:0\x00\r\n:100\r\n", false
		})
		res := runFakeWith(t, f, findScenario("sluice-token"), oneLoop)
		if res.t.errors != 0 || res.t.ok < 8 || int64(res.t.hist.TotalCount()) != res.t.ok {
			t.Fatalf("ok %d, errors %d (%v), %d latencies; want replies, no errors, a latency each",
				res.t.ok, res.t.errors, res.t.sortedProblems(), res.t.hist.TotalCount())
		}
		if lo := time.Duration(res.t.hist.Min()); lo < 2*time.Millisecond {
			t.Fatalf("fastest reply %v; want ≥ 2ms, the time its parts took to come", lo)
		}
	})
}

func TestFakeConnectionDrops(t *testing.T) {
	eachDriver(t, func(t *testing.T, oneLoop bool) {
		f := startFake(t, func(n int64, _ []string) (string, bool) {
			return "+PONG\r\n", n > 20 // answer 20 requests, then hang up on the next
		})
		res := runFakeWith(t, f, findScenario("sluice-ping"), oneLoop)
		assertReported(t, res, "connection: read: EOF")
	})
}

func TestFakeNoscriptReloads(t *testing.T) {
	sc := findScenario("redis-lua-token")
	f := startFake(t, func(n int64, args []string) (string, bool) {
		if args[1] != scriptSHA(sc.lua) {
			return "-ERR wrong sha " + args[1] + "\r\n", false
		}
		if n >= 30 && n < 34 { // the script cache is lost for a moment
			return "-NOSCRIPT No matching script. Please use EVAL.\r\n", false
		}
		return "*2\r\n:1\r\n:99\r\n", false
	})
	res := runFake(t, f, sc)
	if res.t.errors != 0 {
		t.Fatalf("errors = %d (%v); want NOSCRIPT handled by loading the script again", res.t.errors, res.t.sortedProblems())
	}
	if res.t.nosc == 0 || res.t.ok == 0 {
		t.Fatalf("nosc = %d, ok = %d; want the NOSCRIPT replies seen and decisions after them", res.t.nosc, res.t.ok)
	}
	if got := f.scripts.Load(); got < 2 { // the load before the run, then at least one reload
		t.Fatalf("SCRIPT LOAD calls = %d; want a reload after NOSCRIPT", got)
	}
}

// Each reply's latency runs to the read that brought it: a server that
// takes 10 ms per request and writes each reply on its own gives the k-th
// reply of a batch of 4 a latency of about k × 10 ms, not the batch's
// latency for all four, and never less than one request's time.
func TestFakeLatencyPerReply(t *testing.T) {
	eachDriver(t, testLatencyPerReply)
}

func testLatencyPerReply(t *testing.T, oneLoop bool) {
	const step = 10 * time.Millisecond
	f := startFake(t, func(int64, []string) (string, bool) {
		time.Sleep(step)
		return "+PONG\r\n", false
	})
	res := runFakeWith(t, f, findScenario("sluice-ping"), oneLoop)
	if res.t.errors != 0 || res.t.ok < 8 {
		t.Fatalf("ok %d, errors %d; want some replies and no errors", res.t.ok, res.t.errors)
	}
	lo, hi := time.Duration(res.t.hist.Min()), time.Duration(res.t.hist.Max())
	if lo < step || hi < 4*step || hi > 40*step {
		t.Fatalf("latencies %v … %v; want the first reply of a batch at ≥ %v and the fourth at ≥ %v", lo, hi, step, 4*step)
	}
	// The medians of the four positions differ by a step each: about half
	// the replies wait at least 2.5 steps.
	if p50 := time.Duration(res.t.hist.ValueAtQuantile(50)); p50 < 2*step {
		t.Fatalf("median latency %v; want ≥ %v (replies later in a batch wait longer)", p50, 2*step)
	}
}
