package commands

import (
	"math"
	"testing"

	"github.com/tidwall/redcon"
)

// appendInt must write exactly what redcon.AppendInt writes, for every
// int64: the edges, each power of ten and its neighbours.
func TestAppendIntIsRedconsEncoding(t *testing.T) {
	vals := []int64{0, 1, 9, 10, 11, 99, 100, -1, -9, -10, -11, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	for p := int64(1); p <= math.MaxInt64/10; p *= 10 {
		vals = append(vals, p-1, p, p+1, -p+1, -p, -p-1)
	}
	for _, v := range vals {
		prefix := []byte("*5\r\n")
		got := string(appendInt(prefix, v))
		want := string(redcon.AppendInt([]byte("*5\r\n"), v))
		if got != want {
			t.Errorf("appendInt(%d) = %q, want %q", v, got, want)
		}
	}
}

// The same encoder writes RESP3 aggregate and blob headers.
func TestAppendLineHeaders(t *testing.T) {
	for _, c := range []struct {
		kind byte
		n    int64
		want string
	}{{'%', 5, "%5\r\n"}, {'~', 0, "~0\r\n"}, {'=', 1234, "=1234\r\n"}, {'%', 10, "%10\r\n"}} {
		if got := string(appendLine(nil, c.kind, c.n)); got != c.want {
			t.Errorf("appendLine(%q, %d) = %q, want %q", c.kind, c.n, got, c.want)
		}
	}
}

func FuzzAppendInt(f *testing.F) {
	for _, v := range []int64{0, 7, -7, 1234567, math.MaxInt64, math.MinInt64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v int64) {
		if got, want := string(appendInt(nil, v)), string(redcon.AppendInt(nil, v)); got != want {
			t.Fatalf("appendInt(%d) = %q, want %q", v, got, want)
		}
	})
}

func BenchmarkAppendInt(b *testing.B) {
	buf := make([]byte, 0, 64)
	vals := [5]int64{1, 100, 99, 0, 10}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = buf[:0]
		for _, v := range vals {
			buf = appendInt(buf, v)
		}
	}
}
