package commands

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/internal/testutil"
)

func TestTakeGrantsDebitsAndRefunds(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	// 1000/s, capacity 100: a fresh bucket grants what is asked, then what is left.
	if got := ints(t, do(t, rdb, "RL.TAKE", "hot", "TOKEN", "1000/s", "100", "60")); got != "[1 100 40 0 60 60]" {
		t.Fatalf("RL.TAKE of 60 from a full bucket = %s; want [1 100 40 0 60 60]", got)
	}
	if got := ints(t, do(t, rdb, "RL.TAKE", "hot", "TOKEN", "1000/s", "100", "60")); got != "[1 100 0 0 100 40]" {
		t.Fatalf("second RL.TAKE of 60 = %s; want the 40 left: [1 100 0 0 100 40]", got)
	}
	if got := ints(t, do(t, rdb, "RL.TOKEN", "hot", "1000/s", "100")); got != "[0 100 0 1 100]" {
		t.Fatalf("RL.TOKEN after the bucket was taken = %s; want denied", got)
	}
	s.at(10 * time.Millisecond) // 10 tokens back
	if got := ints(t, do(t, rdb, "RL.TAKE", "hot", "TOKEN", "1000/s", "100", "60", "MIN", "11")); got != "[0 100 10 1 90 0]" {
		t.Fatalf("RL.TAKE MIN 11 with 10 there = %s; want denied, nothing taken", got)
	}
	if got := ints(t, do(t, rdb, "RL.TOKEN", "hot", "1000/s", "100", "-25")); got != "[1 100 35 0 65]" {
		t.Fatalf("refund of 25 unspent = %s; want 35 remaining", got)
	}
	// A fixed window's take.
	if got := ints(t, do(t, rdb, "RL.TAKE", "w", "FIXED", "10", "1s", "7", "MIN", "7")); got != "[1 10 3 0 990 7]" {
		t.Fatalf("RL.TAKE FIXED = %s", got)
	}
	// Named replies carry granted by name.
	do(t, rdb, "CLIENT", "NAMED-REPLY", "ON")
	named, ok := do(t, rdb, "RL.TAKE", "w", "FIXED", "10", "1s", "7").([]any)
	if !ok || len(named) != 12 || named[10] != "granted" || named[11] != int64(3) {
		t.Fatalf("named RL.TAKE = %#v; want granted 3 as the sixth pair", named)
	}
}

func TestTakeArgumentErrorsAndRefusedAlgorithms(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"RL.TAKE", "q", "LEAKY", "10/s", "5", "5"}, "ERR " + algorithms.ErrNotLeasable},
		{[]any{"RL.TAKE", "q", "SLIDING", "10", "1s", "5"}, "ERR " + algorithms.ErrNotLeasable},
		{[]any{"RL.TAKE", "q", "LOG", "10", "1s", "5"}, "ERR " + algorithms.ErrNotLeasable},
		{[]any{"RL.TAKE", "q", "BUCKET", "10/s", "5", "5"}, "ERR syntax error"},
		{[]any{"RL.TAKE", "q", "TOKEN", "10/s", "5", "0"}, "ERR max must be positive"},
		{[]any{"RL.TAKE", "q", "TOKEN", "10/s", "5", "5", "MIN", "6"}, "ERR MIN must not exceed max"},
		{[]any{"RL.TAKE", "q", "TOKEN", "10/s", "5", "5", "MAX", "1"}, "ERR syntax error"},
		{[]any{"RL.TAKE", "q", "TOKEN", "10/s", "5"}, "ERR wrong number of arguments for 'rl.take' command"},
	} {
		if got := doErr(t, rdb, c.args...); !strings.HasPrefix(got, c.want) {
			t.Errorf("%v = %q; want %q", c.args, got, c.want)
		}
	}
	if n := do(t, rdb, "DBSIZE"); n != int64(0) {
		t.Fatalf("refused takes left %v keys", n)
	}
	do(t, rdb, "RL.LEAKY", "lk", "10/s", "5")
	if got := doErr(t, rdb, "RL.TAKE", "lk", "TOKEN", "10/s", "5", "5"); !strings.HasPrefix(got, "WRONGTYPE") {
		t.Fatalf("RL.TAKE TOKEN on a leaky key = %q; want WRONGTYPE", got)
	}
}

func TestTakeInMultiAndUnderACL(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	c := testutil.Dial(t, s.addr)
	for _, cmd := range []string{"MULTI", "RL.TAKE m TOKEN 1000/s 100 30", "RL.TAKE m TOKEN 1000/s 100 100 MIN 70"} {
		c.Do(cmd + "\r\n")
	}
	if got := c.Do("EXEC\r\n"); got != "[[:1 :100 :70 :0 :30 :30] [:1 :100 :0 :0 :100 :70]]" {
		t.Fatalf("EXEC of two takes = %s", got)
	}
	do(t, rdb, "ACL", "SETUSER", "holder", "on", ">pw", "~lease:*", "+rl.take", "+rl.token")
	u := testutil.Dial(t, s.addr)
	u.Do("AUTH holder pw\r\n")
	if got := u.Do("RL.TAKE lease:a TOKEN 10/s 5 5\r\n"); got != "[:1 :5 :0 :0 :500 :5]" {
		t.Fatalf("a permitted take = %s", got)
	}
	if got := u.Do("RL.TAKE other TOKEN 10/s 5 5\r\n"); !strings.HasPrefix(got, "-NOPERM") {
		t.Fatalf("a take on a key outside ~lease:* = %s; want NOPERM", got)
	}
	do(t, rdb, "ACL", "SETUSER", "holder", "-rl.take")
	if got := u.Do("RL.TAKE lease:a TOKEN 10/s 5 5\r\n"); !strings.HasPrefix(got, "-NOPERM") {
		t.Fatalf("a take without +rl.take = %s; want NOPERM", got)
	}
}
