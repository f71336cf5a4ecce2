package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// The floor's three processes (this test binary, by TestMain) carry every
// entry: the leader counts them, and its time and the processes' CPU come
// back for both rows.
func TestFloorRowsCountTheirEntries(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var rows []floorRow
	for _, durable := range []bool{true, false} {
		r, err := floorRun(context.Background(), self, t.TempDir(), 4096, durable, 200, 0)
		if err != nil {
			t.Fatal(err)
		}
		if r.entries != 200 || r.size != 4096 || r.sync != durable || r.wall <= 0 || r.leader < 0 || r.followers < 0 {
			t.Fatalf("row %+v: want 200 entries of 4096 bytes, sync %v, a positive time", r, durable)
		}
		rows = append(rows, r)
	}
	var out bytes.Buffer
	printFloor(&out, rows, 200)
	if got := strings.Count(out.String(), "\n| 4,096 | "); got != 2 {
		t.Fatalf("the table has %d rows of 4,096 bytes, want 2:\n%s", got, out.String())
	}
}

// A process of the floor that exits before its part is done fails the row
// at once, with what it said.
func TestFloorFailsWithTheLogOfAProcessThatExited(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, err = floorRun(context.Background(), self, t.TempDir(), 2<<20, true, 10, 0) // the leader refuses entries over 1 MiB
	if err == nil || !strings.Contains(err.Error(), "exited before") || !strings.Contains(err.Error(), "bad arguments") {
		t.Fatalf("err = %v; want the leader's exit and its log's bad arguments", err)
	}
}
