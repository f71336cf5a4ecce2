package policy

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sluice-rl/sluice/algorithms"
)

func TestSplitCheckKeyReadsWhatAppendCheckKeyWrites(t *testing.T) {
	for _, c := range []struct{ name, subject string }{
		{"api", "alice"}, {"a:b c%", "10.0.0.1:443"}, {"free", ""}, {"x", "pol:y:token:z"},
	} {
		key := AppendCheckKey(nil, c.name, algorithms.Sliding, []byte(c.subject))
		name, sub, ok := SplitCheckKey(key)
		if !ok || name != c.name || string(sub) != c.subject {
			t.Errorf("SplitCheckKey(%q) = %q, %q, %v; want %q, %q, true", key, name, sub, ok, c.name, c.subject)
		}
	}
	for _, key := range []string{"user:1", "pol:", "pol:api", "pol:api:token", "pol:api:bogus:x", "pol:a%4:token:x",
		"pol:a%zz:token:x", "ovr:api:x", "rls:d:token:k=v"} {
		if name, sub, ok := SplitCheckKey([]byte(key)); ok {
			t.Errorf("SplitCheckKey(%q) = %q, %q, true; want not ok", key, name, sub)
		}
	}
}

func FuzzSplitCheckKey(f *testing.F) {
	f.Add([]byte("pol:api:token:alice"), "api", []byte("alice"))
	f.Add([]byte("pol:a%3Ab:log:x"), "a:b", []byte("x:y"))
	f.Add([]byte("pol:%:token:"), "%", []byte(""))
	f.Fuzz(func(t *testing.T, key []byte, name string, subject []byte) {
		SplitCheckKey(key) // never panics
		k := AppendCheckKey(nil, name, algorithms.Token, subject)
		n, s, ok := SplitCheckKey(k)
		if !ok || n != name || !bytes.Equal(s, subject) {
			t.Fatalf("SplitCheckKey(%q) = %q, %q, %v; want %q, %q", k, n, s, ok, name, subject)
		}
	})
}

// The escaping keeps the key layout (docs/policies.md): each byte of
// escapeSet as %XX in upper-case hex, every other byte as it is, escapes
// first, last, side by side or absent.
func TestAppendEscapedWritesEachEscapedByteAsPercentHex(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for _, s := range []string{"", "api", ":", "key:000123", ":a:", "a::b%%", "%3A", "x y\x7f\x00", string(all)} {
		var want []byte
		for i := 0; i < len(s); i++ {
			if c := s[i]; escapeSet[c] {
				want = fmt.Appendf(want, "%%%02X", c)
			} else {
				want = append(want, c)
			}
		}
		if got := appendEscaped([]byte("pre"), s); string(got) != "pre"+string(want) {
			t.Errorf("appendEscaped(%q) = %q; want %q", s, got[3:], want)
		}
		if got := appendEscaped(nil, []byte(s)); string(got) != string(want) {
			t.Errorf("appendEscaped([]byte(%q)) = %q; want %q", s, got, want)
		}
	}
	if got := AppendCheckKey(nil, "key:000123", algorithms.Token, []byte("user:1")); string(got) != "pol:key%3A000123:token:user:1" {
		t.Errorf("AppendCheckKey = %q; want pol:key%%3A000123:token:user:1", got)
	}
}

// AppendCheckKeys writes what AppendCheckKey and AppendOverrideKey write,
// one after the other, after what dst holds.
func TestAppendCheckKeysWritesBothKeys(t *testing.T) {
	for _, c := range []struct{ name, subject string }{
		{"api", "alice"}, {"key:000123", "user:1"}, {":a%b:", ""}, {"", "x"}, {"a b\x00", "pol:y:token:z"},
	} {
		for _, algo := range []algorithms.Algo{algorithms.Token, algorithms.Sliding, algorithms.Log} {
			key := AppendCheckKey(nil, c.name, algo, []byte(c.subject))
			ovr := AppendOverrideKey(nil, c.name, []byte(c.subject))
			got, split := AppendCheckKeys([]byte("before"), c.name, algo, []byte(c.subject))
			if string(got[:6]) != "before" || string(got[6:split]) != string(key) || string(got[split:]) != string(ovr) {
				t.Errorf("AppendCheckKeys(%q, %v, %q) = %q split at %d; want before%s%s", c.name, algo, c.subject, got, split, key, ovr)
			}
		}
	}
}
