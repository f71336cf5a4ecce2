package commands

import "testing"

func TestAllocSizeIsTheSizeClass(t *testing.T) {
	for _, c := range []struct{ n, want int64 }{
		{0, 0}, {1, 8}, {8, 8}, {9, 16}, {19, 24}, {33, 48}, {49, 64}, {257, 288},
		{769, 896}, {32768, 32768}, {32769, 40960},
	} {
		if got := allocSize(c.n); got != c.want {
			t.Errorf("allocSize(%d) = %d; want %d", c.n, got, c.want)
		}
	}
}
