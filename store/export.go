package store

import (
	"fmt"

	"github.com/cespare/xxhash/v2"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/shard"
)

// Export and Import move a part of the key space between stores, as a
// sharded cluster moves slots between groups (package cluster): Export
// copies the entries of the keys a predicate selects, Import loads such a
// copy into another store. The image is a run of entries in the snapshot
// payload's encoding (snapshot.go), with their whole state: algorithm,
// state words, lists, expiry.

// Export returns the entries live at now whose keys match selects,
// encoded one after another in chunks of about chunk bytes (each holds
// whole entries, at least one), and their count. Each entry is copied as
// it was at some instant of the export; a caller that needs a
// point-in-time image keeps the selected keys from changing meanwhile (a
// sealed slot range does: its group applies nothing to it).
func (st *Store) Export(now int64, match func(key []byte) bool, chunk int) (chunks [][]byte, count int) {
	var cur []byte
	for i := range st.shards {
		sh := &st.shards[i]
		for pos := 0; ; {
			sh.Lock()
			pos, _ = sh.Scan(pos, copyStep, now, func(key []byte, e shard.Entry) {
				if !match(key) {
					return
				}
				if len(cur) > 0 && len(cur)+len(key)+64 > chunk {
					chunks, cur = append(chunks, cur), nil
				}
				cur = appendEntry(cur, key, &e)
				count++
			})
			sh.Unlock()
			if pos == 0 {
				break
			}
		}
	}
	if len(cur) > 0 {
		chunks = append(chunks, cur)
	}
	return chunks, count
}

// Import stores every entry of image (as Export wrote it) at now,
// replacing an entry the store holds under the same key; an entry that
// has expired by now is left out, as if it had expired here. A corrupt
// image is refused before any entry is stored. An entry the memory limit
// refuses (shard.ErrOOM) is left out and the first such error returned
// after the others are stored.
func (st *Store) Import(now int64, image []byte) (int, error) {
	type item struct {
		key []byte
		e   shard.Entry
	}
	var items []item
	for b := image; len(b) > 0; {
		key, e, n, err := decodeEntryKey(b)
		if err != nil {
			return 0, fmt.Errorf("store: import: %w", err)
		}
		if e.Algo == algorithms.None {
			return 0, fmt.Errorf("store: import: key %q holds no state", key)
		}
		b = b[n:]
		if e.Expire > now {
			items = append(items, item{key, e})
		}
	}
	var first error
	stored := 0
	for i := range items {
		it := &items[i]
		h := xxhash.Sum64(it.key)
		sh := &st.shards[h&st.mask]
		sh.Lock()
		ref, _ := sh.FindHash(it.key, h, now)
		st.noteEntry(&it.e)
		err := sh.Commit(ref, it.key, &it.e, now)
		sh.Unlock()
		if err != nil && first == nil {
			first = fmt.Errorf("store: import: %w", err)
		}
		if err == nil {
			stored++
		}
	}
	return stored, first
}

// DeleteMatching removes every key that match selects and returns how
// many it removed.
func (st *Store) DeleteMatching(now int64, match func(key []byte) bool) int64 {
	var keys [][]byte
	for i := range st.shards {
		sh := &st.shards[i]
		for pos := 0; ; {
			sh.Lock()
			pos, _ = sh.Scan(pos, copyStep, now, func(key []byte, _ shard.Entry) {
				if match(key) {
					keys = append(keys, append([]byte(nil), key...))
				}
			})
			sh.Unlock()
			if pos == 0 {
				break
			}
		}
	}
	n, _ := st.Delete(now, keys)
	return n
}
