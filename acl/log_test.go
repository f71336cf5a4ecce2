package acl

import (
	"strings"
	"testing"
)

func TestLogCountsRepeatsAsRedis(t *testing.T) {
	l := NewLog(4)
	t0 := int64(1_700_000_000_000)
	e := LogEntry{Reason: DeniedKey, Context: Toplevel, Object: "k", Username: "u", ClientInfo: "id=1"}
	at := func(e LogEntry, ms int64) LogEntry { e.Time = t0 + ms; return e }
	l.Add(at(e, 0))
	e2 := e
	e2.ClientInfo = "id=2"
	l.Add(at(e2, 60000)) // within 60 s of the first: counted on it
	got := l.Entries(10)
	if len(got) != 1 || got[0].Count != 2 || got[0].ClientInfo != "id=2" || got[0].Time != t0+60000 {
		t.Fatalf("a repeat within 60 s: %+v", got)
	}
	l.Add(at(e, 120001)) // 60.001 s after the entry's last time: a new entry
	if got = l.Entries(10); len(got) != 2 || got[0].Count != 1 {
		t.Fatalf("a repeat after 60 s: %+v", got)
	}
	if got[0].AgeSeconds(t0+121501) != 1.5 {
		t.Fatalf("AgeSeconds = %v", got[0].AgeSeconds(t0+121501))
	}
	// Another context, reason, object or user is another entry.
	for _, f := range []func(*LogEntry){
		func(x *LogEntry) { x.Context = Multi }, func(x *LogEntry) { x.Reason = DeniedCommand },
		func(x *LogEntry) { x.Object = "k2" }, func(x *LogEntry) { x.Username = "v" },
	} {
		x := at(e, 120002)
		f(&x)
		l.Add(x)
	}
	if got = l.Entries(-1); len(got) != 0 {
		t.Fatal("a negative count")
	}
	if got = l.Entries(100); len(got) != 4 { // bounded
		t.Fatalf("%d entries; want the bound, 4", len(got))
	}
	// A repeat of an older entry moves it to the front.
	l.Add(at(func() LogEntry { x := e; x.Context = Multi; return x }(), 120003))
	if got = l.Entries(1); got[0].Context != Multi || got[0].Count != 2 {
		t.Fatalf("the repeated entry did not move to the front: %+v", got[0])
	}
	l.SetMax(2)
	if len(l.Entries(10)) != 2 {
		t.Fatal("SetMax")
	}
	l.Reset()
	if len(l.Entries(10)) != 0 {
		t.Fatal("Reset")
	}
}

// Only the 10 newest entries are searched for a repeat.
func TestLogSearchesTenEntries(t *testing.T) {
	l := NewLog(DefaultLogMax)
	first := LogEntry{Reason: DeniedCommand, Object: "flushall", Username: "u", Time: 1000}
	l.Add(first)
	for i := 0; i < 10; i++ {
		l.Add(LogEntry{Reason: DeniedCommand, Object: "c" + strings.Repeat("x", i), Username: "u", Time: 1000})
	}
	l.Add(first)
	if got := l.Entries(100); len(got) != 12 || got[0].Count != 1 {
		t.Fatalf("an entry 11 deep was counted on: %d entries, first count %d", len(got), got[0].Count)
	}
}

func TestLogBoundsWhatItKeeps(t *testing.T) {
	l := NewLog(0)
	l.Add(LogEntry{Object: strings.Repeat("k", 1<<20), ClientInfo: strings.Repeat("c", 1<<20)})
	got := l.Entries(10)
	if len(got) != 1 || len(got[0].Object) != maxObject || len(got[0].ClientInfo) != maxClientInfo {
		t.Fatalf("kept %d entries, object %d bytes", len(got), len(got[0].Object))
	}
	for c, want := range map[Context]string{Toplevel: "toplevel", Multi: "multi", Lua: "lua", Module: "module", 9: "unknown"} {
		if c.String() != want {
			t.Errorf("%d.String() = %s", c, c.String())
		}
	}
}
