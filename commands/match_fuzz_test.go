package commands

import (
	"bytes"
	"testing"
)

// FuzzParseMatch: RL.MATCH's argument parser never panics; what it accepts
// is at least one descriptor, each of at least one key/value pair, and
// HITS never negative; every entry it returns is one of the arguments.
func FuzzParseMatch(f *testing.F) {
	for _, seed := range []string{
		"DESCRIPTOR k v", "HITS 0 DESCRIPTOR k v k2 v2 DESCRIPTOR a b", "HITS", "HITS -1 DESCRIPTOR k v",
		"DESCRIPTOR", "DESCRIPTOR k", "DESCRIPTOR k v x", "k v", "hits 3 descriptor k v descriptor descriptor v",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := bytes.Fields([]byte(line))
		m := &matchState{}
		hits, err := parseMatch(m, args)
		if err != nil {
			return
		}
		if hits < 0 || len(m.ds) == 0 {
			t.Fatalf("%q: hits %d, %d descriptors", line, hits, len(m.ds))
		}
		n := 0
		for _, d := range m.ds {
			if len(d.Entries) == 0 {
				t.Fatalf("%q: an empty descriptor", line)
			}
			n += 1 + 2*len(d.Entries)
		}
		if hits != 1 || (len(args) > 0 && equalFold(args[0], "hits")) {
			n += 2
		}
		if n != len(args) {
			t.Fatalf("%q: the descriptors account for %d of %d arguments", line, n, len(args))
		}
	})
}
