package policy

import (
	"bytes"
	"testing"
)

// TestApplyIsDeterministicAndEncodesTheSet: two registries given the same
// changes hold the same command-owned set and encode it to the same bytes;
// a change that deletes reports 1, a second 0; Decode restores the set;
// a malformed change changes nothing.
func TestApplyIsDeterministicAndEncodesTheSet(t *testing.T) {
	changes := [][][]byte{
		SetChange(tokenPolicy("b", 5)), SetChange(tokenPolicy("a", 3)), SetChange(tokenPolicy("b", 7)),
		DelChange("a"), DelChange("a"), SetChange(tokenPolicy("c", 1)),
	}
	wantDeleted := []int64{0, 0, 0, 1, 0, 0}
	var encodings [][]byte
	for range 2 {
		r := NewRegistry()
		for i, c := range changes {
			n, err := r.Apply(c)
			if err != nil || n != wantDeleted[i] {
				t.Fatalf("change %d: %d, %v; want %d, nil", i, n, err, wantDeleted[i])
			}
		}
		encodings = append(encodings, r.Encode())
	}
	if !bytes.Equal(encodings[0], encodings[1]) {
		t.Fatal("two registries given the same changes encode differently")
	}
	r := NewRegistry()
	if err := r.Decode(encodings[0]); err != nil {
		t.Fatal(err)
	}
	if p := r.Policy([]byte("b")); p == nil || p.Limit.Count != 7 {
		t.Fatalf("b after Decode = %+v; want count 7", p)
	}
	if r.Policy([]byte("a")) != nil || r.Policy([]byte("c")) == nil {
		t.Fatal("Decode did not restore the set {b, c}")
	}
	for _, bad := range [][][]byte{{[]byte("set"), []byte("junk")}, {[]byte("put"), []byte("x")}, {[]byte("del")}} {
		if _, err := r.Apply(bad); err == nil {
			t.Errorf("Apply(%q) = nil; want an error", bad)
		}
	}
	if !bytes.Equal(r.Encode(), encodings[0]) {
		t.Error("a refused change changed the set")
	}
}
