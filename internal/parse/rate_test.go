package parse

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestCeilDiv128 checks the 128-bit division behind Rate against
// math/big, on random operands of every size.
func TestCeilDiv128(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func() uint64 { return r.Uint64() >> r.UintN(65) } // 0 to 64 significant bits
	two64 := new(big.Int).Lsh(big.NewInt(1), 64)
	wide := func(hi, lo uint64) *big.Int {
		v := new(big.Int).SetUint64(hi)
		return v.Mul(v, two64).Add(v, new(big.Int).SetUint64(lo))
	}
	const ones = math.MaxUint64
	edges := [][4]uint64{ // nHi, nLo, dHi, dLo
		{0, 0, 0, 1}, {0, ones, 0, 1}, {0, ones, 0, ones}, {ones - 1, ones, 0, ones},
		{ones, ones, 0, ones}, {ones, ones, 1, 0}, {ones, ones, ones, ones}, {1, 0, 1, 0},
		{1, 0, 1, 1}, {1 << 63, 0, 1 << 63, 1}, {ones, ones, 1 << 63, 0}, {ones, ones, 1, ones},
		{1 << 29, 0, 1, 0}, {1<<29 - 1, ones, 1, 0},
	}
	for i := range 20000 {
		var nHi, nLo, dHi, dLo uint64
		if i < len(edges) {
			nHi, nLo, dHi, dLo = edges[i][0], edges[i][1], edges[i][2], edges[i][3]
		} else {
			nHi, nLo, dHi, dLo = word(), word(), word(), word()
		}
		if dHi == 0 && dLo == 0 {
			dLo = 1
		}
		n, d := wide(nHi, nLo), wide(dHi, dLo)
		q, m := new(big.Int).QuoRem(n, d, new(big.Int))
		if m.Sign() != 0 {
			q.Add(q, big.NewInt(1))
		}
		got, ok := ceilDiv128(nHi, nLo, dHi, dLo)
		if want, fits := q.Uint64(), q.IsUint64(); ok != fits || fits && got != want {
			t.Fatalf("ceilDiv128(%d:%d, %d:%d) = %d, %t; want %s, %t", nHi, nLo, dHi, dLo, got, ok, q, fits)
		}
	}
}
