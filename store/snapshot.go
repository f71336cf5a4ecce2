package store

// TEMPORARY (issue-6 branch): a minimal snapshot pair so the cluster can be
// built before the store-at-scale branch lands its versioned, checksummed
// format; replaced by that branch's store/snapshot.go at merge.

import (
	"bufio"
	"encoding/binary"
	"io"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/shard"
)

// Snapshot writes every entry.
func (st *Store) Snapshot(w io.Writer) error {
	bw := bufio.NewWriter(w)
	var buf []byte
	for i := range st.shards {
		sh := &st.shards[i]
		sh.Lock()
		sh.Scan(0, 1<<62, -1<<63, func(key []byte, e shard.Entry) {
			buf = buf[:0]
			buf = append(buf, 1, byte(e.Algo))
			buf = binary.AppendVarint(buf, e.Expire)
			for _, v := range e.State {
				buf = binary.AppendVarint(buf, v)
			}
			buf = binary.AppendUvarint(buf, uint64(len(e.Ext)))
			for _, v := range e.Ext {
				buf = binary.AppendVarint(buf, v)
			}
			buf = binary.AppendUvarint(buf, uint64(len(key)))
			buf = append(buf, key...)
			bw.Write(buf)
		})
		sh.Unlock()
	}
	bw.WriteByte(0)
	return bw.Flush()
}

// Restore replaces the store's content with a snapshot's.
func (st *Store) Restore(r io.Reader) error {
	br := bufio.NewReader(r)
	st.Flush(0)
	for {
		tag, err := br.ReadByte()
		if err != nil {
			return err
		}
		if tag == 0 {
			return nil
		}
		algo, _ := br.ReadByte()
		var e shard.Entry
		e.Algo = algorithms.Algo(algo)
		if e.Expire, err = binary.ReadVarint(br); err != nil {
			return err
		}
		for i := range e.State {
			if e.State[i], err = binary.ReadVarint(br); err != nil {
				return err
			}
		}
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return err
		}
		for j := uint64(0); j < n; j++ {
			v, err := binary.ReadVarint(br)
			if err != nil {
				return err
			}
			e.Ext = append(e.Ext, v)
		}
		kl, err := binary.ReadUvarint(br)
		if err != nil {
			return err
		}
		key := make([]byte, kl)
		if _, err := io.ReadFull(br, key); err != nil {
			return err
		}
		sh := st.shardOf(key)
		sh.Lock()
		ref, _ := sh.Find(key, -1<<63)
		sh.Commit(ref, key, e, -1<<63)
		sh.Unlock()
	}
}
