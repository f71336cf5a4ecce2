package keyslot

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Redis's own values: CRC16("123456789") is 0x31C3 (crc16.c's test), and
// the hash-tag examples of the cluster specification.
func TestKnownSlots(t *testing.T) {
	if got := CRC16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("CRC16(123456789) = %#04x; want 0x31c3", got)
	}
	for _, c := range []struct {
		key  string
		slot int
	}{
		{"123456789", 12739},
		{"", 0},
		{"foo", 12182},
		{"bar", 5061},
		{"user1000", 3443},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"foo{}{bar}", Of([]byte("foo{}{bar}"))},
		{"foo{{bar}}zap", Of([]byte("{bar"))},
		{"foo{bar}{zap}", Of([]byte("bar"))},
		{"{}", Of([]byte("{}"))},
		{"{a", Of([]byte("{a"))},
		{"a{}b{c}", Of([]byte("a{}b{c}"))},
	} {
		if got := Of([]byte(c.key)); got != c.slot {
			t.Errorf("Of(%q) = %d; want %d", c.key, got, c.slot)
		}
	}
	for _, c := range []struct{ key, tag string }{
		{"{user1000}.following", "user1000"},
		{"foo{}{bar}", "foo{}{bar}"},
		{"foo{{bar}}zap", "{bar"},
		{"foo{bar}{zap}", "bar"},
		{"{}", "{}"},
		{"{a", "{a"},
		{"a{}b{c}", "a{}b{c}"},
		{"a}b{c}", "c"},
		{"}{", "}{"},
	} {
		if got := string(HashTag([]byte(c.key))); got != c.tag {
			t.Errorf("HashTag(%q) = %q; want %q", c.key, got, c.tag)
		}
	}
}

// Of agrees with a real redis-server's CLUSTER KEYSLOT on random keys
// built from the bytes that matter to the tag rule, when redis-server is
// installed.
func TestSlotsAgreeWithRedis(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed")
	}
	// The cluster bus listens on a TCP port of the bind address: a random
	// loopback address and port keep it clear of other servers (retried if
	// taken).
	dir := t.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	var conn net.Conn
	for attempt := 0; conn == nil; attempt++ {
		if attempt == 5 {
			t.Fatal("redis-server did not start in 5 attempts")
		}
		conn = startRedis(t, bin, dir, sock, fmt.Sprintf("127.%d.%d.%d", 1+rand.IntN(250), rand.IntN(256), 1+rand.IntN(250)))
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(conn)
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("{}ab\x00\xff:")
	const n = 5000
	keys := make([][]byte, n)
	var req []byte
	for i := range keys {
		k := make([]byte, rng.IntN(12))
		for j := range k {
			if rng.IntN(4) == 0 {
				k[j] = byte(rng.IntN(256))
			} else {
				k[j] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		keys[i] = k
		req = fmt.Appendf(req, "*3\r\n$7\r\nCLUSTER\r\n$7\r\nKEYSLOT\r\n$%d\r\n%s\r\n", len(k), k)
	}
	go conn.Write(req) // the replies are read meanwhile; an error shows as a failed read
	for i, k := range keys {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		want, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(line, ":"), "\r\n"))
		if err != nil {
			t.Fatalf("key %d: redis-server answered %q", i, line)
		}
		if got := Of(k); got != want {
			t.Errorf("Of(%q) = %d; redis-server's CLUSTER KEYSLOT says %d", k, got, want)
		}
	}
}

// FuzzHashTag checks the tag rule against its definition: the tag is the
// whole key, or lies strictly between the first '{' and the first '}'
// after it, and is not empty.
func FuzzHashTag(f *testing.F) {
	for _, s := range []string{"", "{}", "{a", "a{}b{c}", "foo{{bar}}zap", "{user1000}.following", "}{", "{{}}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, key []byte) {
		tag := HashTag(key)
		slot := Of(key)
		if slot < 0 || slot >= Slots {
			t.Fatalf("Of(%q) = %d", key, slot)
		}
		s := -1
		for i, c := range key {
			if c == '{' {
				s = i
				break
			}
		}
		e := -1
		if s >= 0 {
			for i := s + 1; i < len(key); i++ {
				if key[i] == '}' {
					e = i
					break
				}
			}
		}
		if s < 0 || e < 0 || e == s+1 {
			if string(tag) != string(key) {
				t.Fatalf("HashTag(%q) = %q; want the whole key", key, tag)
			}
			return
		}
		if string(tag) != string(key[s+1:e]) || len(tag) == 0 {
			t.Fatalf("HashTag(%q) = %q; want %q", key, tag, key[s+1:e])
		}
		if Of(key) != Of(tag) {
			t.Fatalf("Of(%q) = %d, Of(%q) = %d", key, Of(key), tag, Of(tag))
		}
	})
}

// startRedis starts a cluster-enabled redis-server serving sock whose bus
// listens on bind, and connects to it; nil if the server exited at once.
func startRedis(t *testing.T, bin, dir, sock, bind string) net.Conn {
	os.Remove(sock)
	os.Remove(filepath.Join(dir, "nodes.conf"))
	cmd := exec.Command(bin, "--port", "0", "--bind", bind, "--unixsocket", sock, "--cluster-enabled", "yes",
		"--cluster-port", strconv.Itoa(20000+rand.IntN(30000)), "--dir", dir, "--save", "", "--appendonly", "no")
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		select {
		case err := <-exited:
			t.Logf("redis-server exited: %v\n%s", err, log.String())
			return nil
		default:
		}
		if conn, err := net.Dial("unix", sock); err == nil {
			t.Cleanup(func() { conn.Close(); cmd.Process.Kill(); <-exited })
			return conn
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("redis-server did not listen within 10s\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
