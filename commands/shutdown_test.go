package commands

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-rl/sluice/internal/replyerr"
	"github.com/sluice-rl/sluice/internal/testutil"
)

// fakeShutdowner records what SHUTDOWN asked for; a failing one refuses
// like a process whose save failed.
type fakeShutdowner struct {
	mu      sync.Mutex
	fail    bool
	pending bool // a failed shutdown is being retried
	asked   []ShutdownOptions
}

func (f *fakeShutdowner) Shutdown(opts ShutdownOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, opts)
	if f.fail && !opts.NoSave && !opts.Force {
		f.pending = true
		return errors.New("save failed")
	}
	return nil
}

func (f *fakeShutdowner) AbortShutdown() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	was := f.pending
	f.pending = false
	return was
}

func (f *fakeShutdowner) last() ShutdownOptions {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked[len(f.asked)-1]
}

// TestShutdownArgumentsAndRepliesAreRedis7s: the modifiers, the syntax
// errors of bad combinations, Redis's error after a failed save, ABORT's
// replies, and a successful SHUTDOWN closing the connection with no reply.
func TestShutdownArgumentsAndRepliesAreRedis7s(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		sd := &fakeShutdowner{fail: true}
		ts := startServer(t, testConfig{Shutdowner: sd, EventLoops: loops})
		rdb := ts.client(t, proto(2))
		for _, args := range [][]any{
			{"SHUTDOWN", "SAVE", "NOSAVE"},
			{"SHUTDOWN", "ABORT", "NOW"},
			{"SHUTDOWN", "FORCE", "ABORT"},
			{"SHUTDOWN", "LATER"},
			{"SHUTDOWN", "NOSAVE", "1"},
		} {
			if got := doErr(t, rdb, args...); got != "ERR syntax error" {
				t.Errorf("%v = %q; want ERR syntax error", args, got)
			}
		}
		if got := doErr(t, rdb, "SHUTDOWN", "ABORT"); got != "ERR No shutdown in progress." {
			t.Fatalf("ABORT with none in progress = %q", got)
		}
		if got := doErr(t, rdb, "shutdown", "save", "now"); got != "ERR Errors trying to SHUTDOWN. Check logs." {
			t.Fatalf("SHUTDOWN with a failing save = %q", got)
		}
		if want := (ShutdownOptions{Save: true, Now: true}); sd.last() != want {
			t.Fatalf("asked %+v; want %+v", sd.last(), want)
		}
		if got := do(t, rdb, "PING"); got != "PONG" {
			t.Fatalf("PING after a failed SHUTDOWN = %v", got)
		}
		if got := do(t, rdb, "SHUTDOWN", "ABORT"); got != "OK" {
			t.Fatalf("ABORT of a retrying shutdown = %v", got)
		}
		if got := doErr(t, rdb, "SHUTDOWN", "ABORT"); got != "ERR No shutdown in progress." {
			t.Fatalf("second ABORT = %q", got)
		}

		// Success: no reply, and the connection is closed.
		conn := testutil.Dial(t, ts.addr)
		conn.Send("*2\r\n$8\r\nSHUTDOWN\r\n$5\r\nFORCE\r\n*1\r\n$4\r\nPING\r\n")
		conn.Closed()
		if want := (ShutdownOptions{Force: true}); sd.last() != want {
			t.Fatalf("asked %+v; want %+v", sd.last(), want)
		}
	})
}

// TestShutdownWithoutAShutdownerIsRefused: a server embedded without a
// process to stop says so instead of pretending.
func TestShutdownWithoutAShutdownerIsRefused(t *testing.T) {
	ts := startServer(t, testConfig{})
	rdb := ts.client(t, proto(2))
	if got := doErr(t, rdb, "SHUTDOWN", "NOSAVE"); got != replyerr.Line(errNoShutdowner) {
		t.Fatalf("SHUTDOWN = %q; want %q", got, errNoShutdowner)
	}
	if got := do(t, rdb, "PING"); got != "PONG" {
		t.Fatalf("PING = %v", got)
	}
}

// FuzzParseShutdown: SHUTDOWN's words are accepted exactly when each is a
// modifier in any letter case, ABORT comes alone and SAVE never with
// NOSAVE; the options say which modifiers were there.
func FuzzParseShutdown(f *testing.F) {
	for _, seed := range []string{
		"", "NOSAVE", "save", "SAVE NOW FORCE", "now now", "ABORT", "abort NOW", "SAVE NOSAVE",
		"FORCE NOSAVE", "nosave\x00", "LATER", "sav", "ABORT ABORT", "NÖW",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		var words [][]byte
		for _, w := range strings.Fields(line) {
			words = append(words, []byte(w))
		}
		opts, abort, err := parseShutdown(words)

		var want ShutdownOptions
		wantAbort, valid := false, true
		for _, w := range words {
			switch strings.ToLower(string(w)) {
			case "nosave":
				want.NoSave = true
			case "save":
				want.Save = true
			case "now":
				want.Now = true
			case "force":
				want.Force = true
			case "abort":
				wantAbort = true
			default:
				valid = false
			}
		}
		if wantAbort && want != (ShutdownOptions{}) || want.Save && want.NoSave {
			valid = false
		}
		if !valid {
			if err != errSyntax || opts != (ShutdownOptions{}) || abort {
				t.Fatalf("%q: %+v, %v, %v; want a syntax error", line, opts, abort, err)
			}
			return
		}
		if err != nil || opts != want || abort != wantAbort {
			t.Fatalf("%q: %+v, abort %v, %v; want %+v, abort %v", line, opts, abort, err, want, wantAbort)
		}
	})
}
