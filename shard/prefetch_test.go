package shard

import (
	"fmt"
	"testing"
	"unsafe"
)

// TestPrefetchReadsTheKeysLastWordAndChangesNothing: for records of every
// shape (with and without an expiry word, state words, an Ext, keys of 0
// to 1000 bytes), the word Prefetch loads last is the key's last word (the
// header's for an empty key or a record with an Ext), and Prefetch of
// present and absent keys leaves every entry as it was.
func TestPrefetchReadsTheKeysLastWordAndChangesNothing(t *testing.T) {
	shapes := []Entry{
		tokenEntry(t0 + 5),
		{Algo: 2, Expire: t0 + 9, State: [3]int64{1, 2, 3}},
		{Algo: 3, Expire: 1<<63 - 1, State: [3]int64{0, 0, -7}}, // no expiry word
		{Algo: 4, Expire: t0 + 9},
		{Algo: 5, Expire: t0 + 9, State: [3]int64{t0 + 9, 4}, Depleted: true},
		{Algo: 6, Expire: t0 + 9, State: [3]int64{10}, Ext: []int64{-1, 0, 1 << 62}},
	}
	var s Shard
	var keys []string
	for i, e := range shapes {
		for n := 0; n <= 40; n++ {
			key := fmt.Sprintf("%d/%s", i, string(make([]byte, n)))
			keys = append(keys, key)
			put(t, &s, key, e, t0)
		}
		key := fmt.Sprintf("%d/%s", i, string(make([]byte, 1000)))
		keys = append(keys, key)
		put(t, &s, key, e, t0)
	}
	put(t, &s, "", tokenEntry(t0+3), t0)
	keys = append(keys, "")
	want := make([]Entry, len(keys))
	for i, k := range keys {
		_, l, ok := s.lookup([]byte(k), uint32(s.Hash([]byte(k))>>32))
		if !ok {
			t.Fatalf("%q is not there", k)
		}
		c, w := s.arena.at(l)
		h := c[w]
		last := keyLastWord(c, w, h)
		if kb := keyAt(c, w, h); len(kb) > 0 && h&hdrExt == 0 {
			start := int((uintptr(unsafe.Pointer(&kb[0])) - uintptr(unsafe.Pointer(&c[0]))) / 8)
			if end := start + (len(kb)-1)/8; last != end {
				t.Fatalf("key %q (%d bytes), header %#x: keyLastWord = %d; the key ends in word %d", k, len(k), h, last, end)
			}
		} else if last != w {
			t.Fatalf("key %q (%d bytes), header %#x: keyLastWord = %d; want the header's word %d", k, len(k), h, last, w)
		}
		want[i], _ = get(&s, k, t0)
	}
	shs := make([]*Shard, PrefetchMax)
	for i := range shs {
		shs[i] = &s
	}
	var hs []uint64
	for _, k := range keys {
		hs = append(hs, s.Hash([]byte(k)), s.Hash([]byte("absent:"+k)))
	}
	for i := 0; i < len(hs); i += PrefetchMax {
		part := hs[i:min(i+PrefetchMax, len(hs))]
		Prefetch(shs[:len(part)], part)
	}
	for i, k := range keys {
		if got, ok := get(&s, k, t0); !ok || !sameEntry(got, want[i]) {
			t.Fatalf("after Prefetch %q = %+v (present %v); want %+v", k, got, ok, want[i])
		}
	}
}
