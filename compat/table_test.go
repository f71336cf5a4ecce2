package compat

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

func TestKnownSHA1sAreWhatRedisScriptLoadReturns(t *testing.T) {
	srv := startRedis(t)
	for _, s := range Known.Scripts() {
		if got := srv.load(t, s.Text); got != s.SHA1 {
			t.Errorf("%s %s %s: SCRIPT LOAD = %s; table says %s", s.Library, s.Name, s.Versions, got, s.SHA1)
		}
	}
	if n := len(Known.Scripts()); n != 24 {
		t.Errorf("%d known scripts; want 24", n)
	}
}

func TestLookupBySHA1IgnoresCaseAndByTextNeedsTheExactText(t *testing.T) {
	for _, s := range Known.Scripts() {
		if Known.Lookup([]byte(strings.ToUpper(s.SHA1))) != s || Known.Lookup([]byte(s.SHA1)) != s {
			t.Errorf("Lookup(%s) in either case does not find %s", s.SHA1, s.Name)
		}
		if Known.LookupText([]byte(s.Text)) != s {
			t.Errorf("LookupText of %s's text does not find it", s.Name)
		}
		if Known.LookupText([]byte(s.Text+"\n")) != nil || Known.LookupText([]byte(s.Text[:len(s.Text)-1])) != nil {
			t.Errorf("LookupText of %s's text with a byte more or less finds it; want nil", s.Name)
		}
		if s.ReadOnly != (s.impl == implRLRGet || s.impl == implUlulePeek || s.impl == implLimitsMovingWindow) {
			t.Errorf("%s: ReadOnly = %v", s.Name, s.ReadOnly)
		}
	}
	for _, bad := range []string{"", "a1de965f", "a1de965f42e177aa339706bd580f049065eca79", "a1de965f42e177aa339706bd580f049065eca79az",
		"g1de965f42e177aa339706bd580f049065eca79a", "0000000000000000000000000000000000000000"} {
		if s := Known.Lookup([]byte(bad)); s != nil {
			t.Errorf("Lookup(%q) = %s; want nil", bad, s.Name)
		}
	}
}

func TestSuggestNamesTheNativeCommandForAModifiedScript(t *testing.T) {
	// rate-limiter-flexible's customIncrTtlLuaScript option: the same
	// script with one more statement.
	flex := Known.Lookup([]byte(FlexibleSHA1))
	custom := strings.Replace(flex.Text, "return {consumed, ttl}", "redis.call('publish', 'hits', KEYS[1]) return {consumed, ttl}", 1)
	if s := Known.Suggest([]byte(custom)); s == nil || s.Library != "rate-limiter-flexible" || !strings.HasPrefix(s.Native, "RL.FIXED") {
		t.Fatalf("Suggest(modified flexible) = %+v; want rate-limiter-flexible's, RL.FIXED", s)
	}
	spring := Known.Lookup([]byte(SpringSHA1v430))
	if s := Known.Suggest([]byte(strings.ReplaceAll(spring.Text, "\n", "\r\n"))); s == nil || s.Library != "Spring Cloud Gateway" {
		t.Fatalf("Suggest(Spring's text with CRLF) = %+v", s)
	}
	if s := Known.Suggest([]byte("return redis.call('GET', KEYS[1])")); s != nil {
		t.Fatalf("Suggest(an unrelated script) = %s; want nil", s.Name)
	}
}

// rawCall sends one command in RESP on a fresh connection (after HELLO 3
// when resp3) and returns the reply's bytes exactly.
func rawCall(t *testing.T, addr string, resp3 bool, args ...string) []byte {
	t.Helper()
	network := "tcp"
	if strings.HasPrefix(addr, "/") {
		network = "unix" // redis-server's socket
	}
	conn, err := net.DialTimeout(network, addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(conn)
	send := func(args ...string) {
		var b bytes.Buffer
		b.WriteString("*" + itoa(int64(len(args))) + "\r\n")
		for _, a := range args {
			b.WriteString("$" + itoa(int64(len(a))) + "\r\n" + a + "\r\n")
		}
		conn.Write(b.Bytes())
	}
	if resp3 {
		send("HELLO", "3")
		readReply(t, r)
	}
	send(args...)
	return readReply(t, r)
}

// readReply reads one RESP reply of the types the scripts return.
func readReply(t *testing.T, r *bufio.Reader) []byte {
	t.Helper()
	line, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte(nil), line...)
	switch line[0] {
	case '*', '%':
		n := parseLen(line)
		if line[0] == '%' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			out = append(out, readReply(t, r)...)
		}
	case '$', '=':
		if n := parseLen(line); n >= 0 {
			body := make([]byte, n+2)
			if _, err := io.ReadFull(r, body); err != nil {
				t.Fatal(err)
			}
			out = append(out, body...)
		}
	}
	return out
}

func parseLen(line []byte) int {
	n, neg := 0, false
	for _, c := range line[1:] {
		switch {
		case c == '-':
			neg = true
		case '0' <= c && c <= '9':
			n = n*10 + int(c-'0')
		}
	}
	if neg {
		return -n
	}
	return n
}

// TestReplyBytesMatchRedis compares AppendRESP with the bytes Redis sends,
// in RESP2 and RESP3, for a nil element, integers, bulk strings and errors.
func TestReplyBytesMatchRedis(t *testing.T) {
	srv := startRedis(t)
	addr := srv.rdb.Options().Addr
	ctx := context.Background()
	get := Known.Lookup([]byte(RateLimitRedisGetSHA1))
	allowN := Known.Lookup([]byte(AllowNSHA1v911))
	srv.load(t, get.Text)
	srv.load(t, allowN.Text)
	if err := srv.rdb.Set(ctx, "compat-test:float", "0.5", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		s    *Script
		keys []Key
		args []string // EVALSHA's arguments after the SHA1
	}{
		{get, []Key{{}}, []string{"1", "compat-test:none"}},
		{get, []Key{{Value: NumberValue(0.5), Expire: NoExpire}}, []string{"1", "compat-test:float"}},
		{get, nil, []string{"0"}},
		{allowN, []Key{{}}, []string{"1", "compat-test:gcra", "1", "1", "1", "1"}}, // TIME-independent reply
	}
	for _, resp3 := range []bool{false, true} {
		for _, c := range cases {
			want := rawCall(t, addr, resp3, append([]string{"EVALSHA", c.s.SHA1}, c.args...)...)
			call := Call{Now: time.Now().UnixNano(), Keys: append([]Key(nil), c.keys...)}
			for _, a := range c.args[1+len(c.keys):] {
				call.Argv = append(call.Argv, []byte(a))
			}
			c.s.Run(&call)
			if got := call.Reply.AppendRESP(nil, resp3); !bytes.Equal(got, want) {
				t.Errorf("RESP3 %v, EVALSHA %s %v:\n native %q\n redis  %q", resp3, c.s.Name, c.args, got, want)
			}
			srv.rdb.Del(ctx, "compat-test:gcra")
		}
	}
}

func TestTableEntriesAreComplete(t *testing.T) {
	for _, s := range Known.Scripts() {
		sum := sha1.Sum([]byte(s.Text))
		if hex.EncodeToString(sum[:]) != s.SHA1 || s.Library == "" || s.Name == "" || s.Versions == "" ||
			s.Native == "" || s.Keys < 1 || len(s.markers) == 0 || s.impl == 0 {
			t.Errorf("incomplete entry: %+v", s)
		}
	}
}

func BenchmarkLookupBySHA1(b *testing.B) {
	sha := []byte(strings.ToUpper(SpringSHA1v430))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if Known.Lookup(sha) == nil {
			b.Fatal("not found")
		}
	}
}

func BenchmarkLookupByText(b *testing.B) {
	text := []byte(Known.Lookup([]byte(SpringSHA1v430)).Text)
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for i := 0; i < b.N; i++ {
		if Known.LookupText(text) == nil {
			b.Fatal("not found")
		}
	}
}
