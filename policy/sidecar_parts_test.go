package policy

import (
	"errors"
	"testing"
)

// The parts a single node's log keeps for RL.POLICY SET and DEL, loaded
// over a whole state or over the policies as they are.
func TestSidecarPartsReplayOverTheWholeState(t *testing.T) {
	src := NewRegistry()
	for _, p := range []Policy{tokenPolicy("free", 20), tokenPolicy("pro", 200)} {
		if err := src.Set(p); err != nil {
			t.Fatal(err)
		}
	}
	base := src.AppendSidecar(nil)
	var parts [][]byte
	if err := src.Set(tokenPolicy("pro", 300)); err != nil {
		t.Fatal(err)
	}
	parts = append(parts, src.AppendSidecarPart(nil, []byte("pro")))
	if _, err := src.Delete("free"); err != nil {
		t.Fatal(err)
	}
	parts = append(parts, src.AppendSidecarPart(nil, []byte("free")))
	if err := src.Set(tokenPolicy("team", 2)); err != nil {
		t.Fatal(err)
	}
	parts = append(parts, src.AppendSidecarPart(nil, []byte("team")))
	parts = append(parts, parts...) // replayed twice: the same state

	dst := NewRegistry()
	if err := dst.Set(tokenPolicy("stale", 1)); err != nil {
		t.Fatal(err)
	}
	if err := dst.LoadSidecarParts(base, parts); err != nil {
		t.Fatal(err)
	}
	if got, want := string(dst.AppendSidecar(nil)), string(src.AppendSidecar(nil)); got != want {
		t.Fatalf("loaded policies = %q; want %q", got, want)
	}
	// Without a base the parts apply to the policies as they are.
	more := NewRegistry()
	if err := more.Set(tokenPolicy("stale", 1)); err != nil {
		t.Fatal(err)
	}
	if err := more.LoadSidecarParts(nil, parts); err != nil {
		t.Fatal(err)
	}
	if _, cmds, _, _ := more.Load().Counts(); cmds != 3 || more.Policy([]byte("stale")) == nil || more.Policy([]byte("pro")).Limit.Count != 300 {
		t.Fatalf("parts over the policies as they are: %d policies, stale %v, pro %v", cmds, more.Policy([]byte("stale")), more.Policy([]byte("pro")))
	}
	// A malformed part refuses the load and changes nothing.
	for _, bad := range [][]byte{{}, []byte("Xfree"), []byte("Dbad name"), []byte("Sjunk")} {
		if err := more.LoadSidecarParts(nil, [][]byte{parts[0], bad}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("LoadSidecarParts(%q) = %v; want ErrCorrupt", bad, err)
		}
		if more.Policy([]byte("stale")) == nil || more.Policy([]byte("pro")).Limit.Count != 300 {
			t.Fatalf("a refused load of %q changed the policies", bad)
		}
	}
}
