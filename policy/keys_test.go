package policy

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/algorithms"
)

func TestDerivedKeys(t *testing.T) {
	cases := []struct{ got, want string }{
		{string(AppendCheckKey(nil, "free", algorithms.Token, []byte("key:abc"))), "pol:free:token:key:abc"},
		{string(AppendCheckKey(nil, "api:free", algorithms.Fixed, []byte("u 1"))), "pol:api%3Afree:fixed:u 1"},
		{string(AppendOverrideKey(nil, "free", []byte("abc"))), "ovr:free:abc"},
		{string(AppendOverridePattern(nil, "a:b")), "ovr:a%3Ab:*"},
		{string(appendRuleEntry(new(ruleKey), new(ruleKey).head(nil, []byte("my domain"), algorithms.Sliding), []byte("path"), "/v1/*?x=[1]")),
			"rls:my%20domain:sliding:path=/v1/%2A%3Fx%3D%5B1%5D"},
		{string(appendEscaped(nil, "100%\x00\x7f\\é")), "100%25%00%7F%5Cé"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("key %q; want %q", c.got, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		var buf [64]byte
		AppendCheckKey(buf[:0], "free", algorithms.Token, []byte("key:abc"))
	}); n != 0 {
		t.Errorf("AppendCheckKey allocates %v times", n)
	}
}

// TestRuleKeysAreUnambiguous builds keys from random domains and entries
// drawn from an alphabet full of separators, and checks that splitting a
// key at its colons and unescaping gives back exactly what built it, and
// that escaped components hold no glob characters.
func TestRuleKeysAreUnambiguous(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("ab:=%*?[]\\ _.\x00\x7f/")
	word := func() string {
		b := make([]byte, rng.IntN(5))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	seen := map[string]string{}
	for i := 0; i < 20000; i++ {
		domain := word() + "d"
		parts := []string{domain}
		var rk ruleKey
		key := rk.head(nil, []byte(domain), algorithms.Fixed)
		for n := rng.IntN(3); n > 0; n-- {
			k, v := word(), word()
			key = appendRuleEntry(&rk, key, []byte(k), v)
			parts = append(parts, k+"\x01"+v)
		}
		whole := strings.Join(parts, "\x02")
		if prev, dup := seen[string(key)]; dup && prev != whole {
			t.Fatalf("%q and %q share the key %q", prev, whole, key)
		}
		seen[string(key)] = whole
		fields := strings.Split(string(key), ":")
		if fields[0] != "rls" || fields[2] != "fixed" || len(fields)-3 != len(parts)-1 {
			t.Fatalf("key %q splits into %q", key, fields)
		}
		if strings.ContainsAny(string(key[4:]), "*?[]\\") {
			t.Fatalf("key %q holds a glob character", key)
		}
		got := []string{mustUnescape(t, fields[1])}
		for _, f := range fields[3:] {
			kv := strings.Split(f, "=")
			if len(kv) != 2 {
				t.Fatalf("entry %q of %q", f, key)
			}
			got = append(got, mustUnescape(t, kv[0])+"\x01"+mustUnescape(t, kv[1]))
		}
		if strings.Join(got, "\x02") != whole {
			t.Fatalf("key %q decodes to %q; built from %q", key, got, parts)
		}
	}
}

func mustUnescape(t *testing.T, s string) string {
	t.Helper()
	u, ok := unescapeName([]byte(s))
	if !ok {
		t.Fatalf("unescapeName(%q) failed", s)
	}
	return u
}

// AppendCheckKeys writes the two keys AppendCheckKey and AppendOverrideKey
// write, one after the other, escaped names included.
func TestAppendCheckKeysIsBothKeys(t *testing.T) {
	for _, c := range []struct{ name, subject string }{
		{"free", "key:abc"}, {"pk:000123", "pk:000123"}, {"a%b*c d", ""}, {"x", "sub ject*"},
	} {
		dst := []byte("before|")
		got, split := AppendCheckKeys(dst, c.name, algorithms.Sliding, []byte(c.subject))
		key := AppendCheckKey(nil, c.name, algorithms.Sliding, []byte(c.subject))
		ovr := AppendOverrideKey(nil, c.name, []byte(c.subject))
		if string(got[:7]) != "before|" || string(got[7:split]) != string(key) || string(got[split:]) != string(ovr) {
			t.Errorf("AppendCheckKeys(%q, %q) = %q split at %d; want %q then %q", c.name, c.subject, got, split, key, ovr)
		}
	}
}

// BenchmarkAppendCheckKeys builds RL.CHECK's two keys for a policy whose
// name has an escaped byte, as bench's sluice-check-100k names them.
func BenchmarkAppendCheckKeys(b *testing.B) {
	dst := make([]byte, 0, 128)
	subject := []byte("user:000123")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		dst, _ = AppendCheckKeys(dst[:0], "key:000123", algorithms.Token, subject)
	}
}

// BenchmarkAppendCheckKey builds the state key alone: what
// BenchmarkAppendCheckKeys costs beyond it is the override key's part.
func BenchmarkAppendCheckKey(b *testing.B) {
	dst := make([]byte, 0, 128)
	subject := []byte("user:000123")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		dst = AppendCheckKey(dst[:0], "key:000123", algorithms.Token, subject)
	}
}
