package store

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/compat"
)

// acquire is Python limits' acquire_moving_window at now: a limit of limit
// per expiry seconds, one hit.
func acquire(st *Store, now int64, key string, limit, expiry int) string {
	ts := strconv.FormatFloat(float64(now)/1e9, 'f', -1, 64)
	return exec(st, now, script(compat.LimitsAcquireSHA1), []string{key}, ts, strconv.Itoa(limit), strconv.Itoa(expiry), "1")
}

// TestListKeepsItsEntriesAcrossCallsSnapshotsAndTheLog: the moving
// window's list is stored (its elements, its TTL, TYPE list), so the next
// call sees the entries the last one pushed; a snapshot and the append-only
// log bring back the same list.
func TestListKeepsItsEntriesAcrossCallsSnapshotsAndTheLog(t *testing.T) {
	st, a, path := openLog(t, FsyncNo)
	now := t0
	for i, want := range []string{"1", "1", "1", "(nil)"} {
		if got := acquire(st, now, "LIMITER/w", 3, 10); got != want {
			t.Fatalf("hit %d = %s; want %s", i+1, got, want)
		}
		now += int64(time.Second)
	}
	window := script(compat.LimitsMovingWindowSHA1)
	want := fmt.Sprintf("[%d 3]", (t0+2*int64(time.Second))/1e9)
	if got := exec(st, now, window, []string{"LIMITER/w"}, strconv.FormatInt(now/1e9-10, 10), "3"); got != want {
		t.Fatalf("moving_window = %s; want %s", got, want)
	}
	if algo, _ := st.Type(now, []byte("LIMITER/w")); algo != algorithms.List || algo.String() != "list" {
		t.Fatalf("TYPE = %v; want list", algo)
	}
	// EXPIRE 10 at the third hit (t0+2s; the fourth was refused and wrote
	// nothing), now t0+4s: 8 s left.
	if ttl, _ := st.TTL(now, []byte("LIMITER/w")); ttl != 8*int64(time.Second) {
		t.Fatalf("TTL = %d; want 8 s", ttl)
	}
	if got := exec(st, now, compat.Op{Cmd: compat.CmdGet}, []string{"LIMITER/w"}); got != "(error) "+compat.ErrWrongType.Error() {
		t.Fatalf("GET of the list = %s; want WRONGTYPE", got)
	}
	restored := New(8)
	if err := restored.Restore(bytes.NewReader(snapshotBytes(t, st, now))); err != nil {
		t.Fatal(err)
	}
	if got := exec(restored, now, window, []string{"LIMITER/w"}, strconv.FormatInt(now/1e9-10, 10), "3"); got != want {
		t.Fatalf("moving_window after a restore = %s; want %s", got, want)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := loadLog(t, path, AOFLoadOptions{})
	if !bytes.Equal(snapshotBytes(t, got, now), snapshotBytes(t, st, now)) {
		t.Fatal("the store loaded from the log differs from the one the scripts wrote")
	}
	// Past its TTL the list is gone.
	if n, _ := st.Exists(now+int64(9*time.Second), [][]byte{[]byte("LIMITER/w")}); n != 0 {
		t.Fatalf("EXISTS after the TTL = %d; want 0", n)
	}
}

// TestListEntriesCountAgainstMemory: a moving window of 1,000 entries takes
// at least 8 bytes an entry of the store's memory, so --maxmemory sees it.
func TestListEntriesCountAgainstMemory(t *testing.T) {
	st := New(4)
	before := st.Stats()
	now := t0
	for i := 0; i < 1000; i++ {
		if got := acquire(st, now, "LIMITER/big", 1000, 3600); got != "1" {
			t.Fatalf("hit %d = %s; want 1", i+1, got)
		}
		now += int64(time.Millisecond)
	}
	after := st.Stats()
	grew := (after.Used() - after.FreeBytes) - (before.Used() - before.FreeBytes)
	if grew < 8000 {
		t.Fatalf("a list of 1,000 entries grew the store by %d bytes; want at least 8,000", grew)
	}
}

// TestLongStringsAreStoredWhole: a lock's token (32 bytes) and a 64-byte
// string keep every byte through GET, a snapshot and the append-only log;
// their bytes past the 22nd take room of their own.
func TestLongStringsAreStoredWhole(t *testing.T) {
	st, a, path := openLog(t, FsyncNo)
	token := "6c4e3b1e8c8411ef9a2f0242ac120002"
	long := token + "7d5f4c2f9d9522f0ab30f353bd231113"
	before := st.Stats()
	exec(st, t0, setOp, []string{"lock:a"}, token, "NX", "PX", "30000")
	exec(st, t0, setOp, []string{"v"}, long)
	mid := st.Stats()
	exec(st, t0, setOp, []string{"short:a"}, "x")
	exec(st, t0, setOp, []string{"short:b"}, "y")
	after := st.Stats()
	long2 := (mid.Used() - mid.FreeBytes) - (before.Used() - before.FreeBytes)
	short2 := (after.Used() - after.FreeBytes) - (mid.Used() - mid.FreeBytes)
	if long2 < short2+(32-22+64-22) {
		t.Fatalf("two long strings took %d bytes, two short ones %d; want the long ones' extra bytes counted", long2, short2)
	}
	get := compat.Op{Cmd: compat.CmdGet}
	restored := New(8)
	if err := restored.Restore(bytes.NewReader(snapshotBytes(t, st, t0))); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	logged, _ := loadLog(t, path, AOFLoadOptions{})
	for _, s := range []*Store{st, restored, logged} {
		if got := exec(s, t0, get, []string{"lock:a"}); got != strconv.Quote(token) {
			t.Fatalf("GET lock:a = %s; want %q", got, token)
		}
		if got := exec(s, t0, get, []string{"v"}); got != strconv.Quote(long) {
			t.Fatalf("GET v = %s; want %q", got, long)
		}
	}
	if got := exec(st, t0, setOp, []string{"v"}, long+"x"); got != "(error) "+compat.ErrValueTooLong.Error() {
		t.Fatalf("SET of 65 bytes = %s; want %s", got, compat.ErrValueTooLong)
	}
}
