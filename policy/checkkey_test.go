package policy

import (
	"bytes"
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
