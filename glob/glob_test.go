package glob

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/glob/globtest"
)

// refStringMatch is the reference for Match: Redis 7.0's stringmatchlen
// (util.c) transcribed statement by statement, without the early exit that
// 7.0.9 added (so exponential: small inputs only). The pattern gets a NUL
// after it, as Redis's sds strings have, because the C reads one byte past
// the end in a class and when stripping trailing stars. chars are signed and
// tolower is glibc's, as on x86-64 Linux.
func refStringMatch(pattern, str []byte, nocase bool, maxNesting int) bool {
	pat := append(append([]byte(nil), pattern...), 0)
	return refImpl(pat, 0, len(pattern), str, 0, len(str), nocase, 0, maxNesting)
}

func refImpl(pat []byte, pi, plen int, str []byte, si, slen int, nocase bool, nesting, maxNesting int) bool {
	if nesting > maxNesting {
		return false
	}
	sc := func(b byte) int { return int(int8(b)) }
	for plen != 0 && slen != 0 {
		switch pat[pi] {
		case '*':
			for plen != 0 && pat[pi+1] == '*' {
				pi++
				plen--
			}
			if plen == 1 {
				return true
			}
			for slen != 0 {
				if refImpl(pat, pi+1, plen-1, str, si, slen, nocase, nesting+1, maxNesting) {
					return true
				}
				si++
				slen--
			}
			return false
		case '?':
			si++
			slen--
		case '[':
			pi++
			plen--
			not := pat[pi] == '^'
			if not {
				pi++
				plen--
			}
			match := false
			for {
				if pat[pi] == '\\' && plen >= 2 {
					pi++
					plen--
					if pat[pi] == str[si] {
						match = true
					}
				} else if pat[pi] == ']' {
					break
				} else if plen == 0 {
					pi--
					plen++
					break
				} else if plen >= 3 && pat[pi+1] == '-' {
					start, end, c := sc(pat[pi]), sc(pat[pi+2]), sc(str[si])
					if start > end {
						start, end = end, start
					}
					if nocase {
						start, end, c = glibcToLower(start), glibcToLower(end), glibcToLower(c)
					}
					pi += 2
					plen -= 2
					if c >= start && c <= end {
						match = true
					}
				} else if !nocase {
					if pat[pi] == str[si] {
						match = true
					}
				} else if glibcToLower(sc(pat[pi])) == glibcToLower(sc(str[si])) {
					match = true
				}
				pi++
				plen--
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			si++
			slen--
		default:
			if pat[pi] == '\\' && plen >= 2 {
				pi++
				plen--
			}
			if !nocase {
				if pat[pi] != str[si] {
					return false
				}
			} else if glibcToLower(sc(pat[pi])) != glibcToLower(sc(str[si])) {
				return false
			}
			si++
			slen--
		}
		pi++
		plen--
		if slen == 0 {
			for pat[pi] == '*' {
				pi++
				plen--
			}
			break
		}
	}
	return plen == 0 && slen == 0
}

// glibcToLower is tolower(3) of glibc in the C locale over its domain
// -128…255 (checked with a C program): the table maps -128…-2 to 128…254.
func glibcToLower(c int) int {
	switch {
	case c == -1:
		return -1
	case c < 0:
		return c + 256
	case c >= 'A' && c <= 'Z':
		return c + 32
	}
	return c
}

func TestGlobMatchesRedisAnswers(t *testing.T) {
	for _, tc := range globtest.Cases {
		got, decided, _ := Match([]byte(tc.Pattern), []byte(tc.Str), false, MaxStars, -1)
		if got != tc.Want || !decided {
			t.Errorf("Match(%q, %q) = %v (decided %v); want %v", tc.Pattern, tc.Str, got, decided, tc.Want)
		}
		if len(tc.Str) > 20 {
			continue // the reference is exponential
		}
		if ref := refStringMatch([]byte(tc.Pattern), []byte(tc.Str), false, MaxStars); ref != tc.Want {
			t.Errorf("reference(%q, %q) = %v; want %v", tc.Pattern, tc.Str, ref, tc.Want)
		}
	}
}

func TestGlobNocase(t *testing.T) {
	for _, tc := range []struct {
		Pattern, Str string
		Want         bool
	}{
		{"maxMEMORY*", "maxmemory-policy", true},
		{"[A-C]x", "bX", true},
		{"[\\A]", "a", false}, // an escaped byte in a class compares exactly
		{"\\A", "a", true},    // outside a class the escaped byte folds
		{"[Z-a]", "B", false}, // 'Z'…'a' folds to 'z'…'a': empty
		{"[\x80-\x90]", "\x85", true},
	} {
		if got, _, _ := Match([]byte(tc.Pattern), []byte(tc.Str), true, MaxStars, -1); got != tc.Want {
			t.Errorf("Match(%q, %q, nocase) = %v; want %v", tc.Pattern, tc.Str, got, tc.Want)
		}
		if ref := refStringMatch([]byte(tc.Pattern), []byte(tc.Str), true, MaxStars); ref != tc.Want {
			t.Errorf("reference(%q, %q, nocase) = %v; want %v", tc.Pattern, tc.Str, ref, tc.Want)
		}
	}
}

func TestGlobMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200_000; i++ {
		pat, str := globtest.Rand(r, globtest.Alphabet, 9), globtest.Rand(r, "ab]-\\*Az\x80\xff", 7)
		nocase := i%2 == 1
		limit := []int{MaxStars, 0, 1, 2}[i%4]
		got, decided, _ := Match(pat, str, nocase, limit, -1)
		if want := refStringMatch(pat, str, nocase, limit); got != want || !decided {
			t.Fatalf("Match(%q, %q, nocase %v, stars %d) = %v; reference says %v", pat, str, nocase, limit, got, want)
		}
	}
}

// TestGlobLongPartsMatchReference compares parts of up to 150 elements
// between the stars (each way of finding a part: literal, bit-parallel,
// position by position) with the reference, whose work grows with the
// number of stars, not with the length of the parts. The patterns are cut
// from the string itself, so that about half of them match.
func TestGlobLongPartsMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	matches := 0
	for i := 0; i < 20_000; i++ {
		pat, str := globtest.LongCase(r)
		got, decided, _ := Match(pat, str, false, MaxStars, -1)
		if want := refStringMatch(pat, str, false, MaxStars); got != want || !decided {
			t.Fatalf("Match(%q, %q) = %v; reference says %v", pat, str, got, want)
		}
		if got {
			matches++
		}
	}
	if matches < 2_000 || matches > 18_000 {
		t.Fatalf("%d of 20,000 patterns match; the comparison needs both answers", matches)
	}
	t.Logf("%d of 20,000 patterns match", matches)
}

func FuzzMatch(f *testing.F) {
	for _, tc := range globtest.Cases {
		if len(tc.Str) < 16 {
			f.Add([]byte(tc.Pattern), []byte(tc.Str), false, uint8(0))
		}
	}
	f.Fuzz(func(t *testing.T, pat, str []byte, nocase bool, stars uint8) {
		if len(pat) > 16 || len(str) > 12 {
			return // the reference is exponential
		}
		limit := int(stars % 4)
		if stars >= 4 {
			limit = MaxStars
		}
		got, decided, steps := Match(pat, str, nocase, limit, -1)
		if want := refStringMatch(pat, str, nocase, limit); got != want || !decided {
			t.Fatalf("Match(%q, %q, nocase %v, stars %d) = %v; reference says %v", pat, str, nocase, limit, got, want)
		}
		if bound := 512*(len(pat)+1) + 3*(len(pat)+1)*(len(str)+1); steps > bound {
			t.Fatalf("Match(%q, %q) took %d steps; more than %d", pat, str, steps, bound)
		}
		// A limit below the steps needed stops the match undecided.
		if _, ok, _ := Match(pat, str, nocase, limit, steps-1); ok && steps > 1 {
			t.Fatalf("Match(%q, %q) decided within %d steps; it needed %d", pat, str, steps-1, steps)
		}
	})
}

// TestGlobWorkIsLinearForStarRuns counts steps (not time): the patterns
// that make a recursive matcher try every split take a few steps per byte.
func TestGlobWorkIsLinearForStarRuns(t *testing.T) {
	for _, n := range []int{120, 1 << 10, 1 << 20} {
		key := []byte(strings.Repeat("a", n))
		for _, pat := range []string{"*a*a*a*a*a*a*b", "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", "a*?*[a]*b"} {
			m, decided, steps := Match([]byte(pat), key, false, MaxStars, -1)
			if m || !decided || steps > 3*n+512*len(pat) {
				t.Errorf("Match(%s, %d a's) = %v after %d steps; want no match within %d", pat, n, m, steps, 3*n+512*len(pat))
			}
		}
	}
}

func BenchmarkMatch(b *testing.B) {
	for _, bc := range []struct{ name, pattern, str string }{
		{"prefix", "user:*", "user:1234:session"},
		{"infix", "*:1234:*", "user:1234:session"},
		{"class", "user:[0-9]*:s?ssion", "user:1234:session"},
		{"starRuns-120", "*a*a*a*a*a*a*b", strings.Repeat("a", 120)},
		{"starRuns-1MiB", "*a*a*a*a*a*a*b", strings.Repeat("a", 1<<20)},
		{"anyThenLiteral-1MiB", "*?b", strings.Repeat("a", 1<<20)},
		{"nearMisses-1MiB", "*a?aaaaaaaaab*", strings.Repeat("a", 1<<20)},
		{"longPart-64KiB", "*" + strings.Repeat("a", 70) + "?b*", strings.Repeat("a", 1<<16)},
		{"classes-64KiB", "*[a-c][^x][ab]" + strings.Repeat("[b-a]", 50) + "[ab]b*", strings.Repeat("a", 1<<16)},
		{"manyClasses", strings.Repeat("*[abcdefghijklmnopqrstuvwxyz0-9]", 900) + "*", strings.Repeat("a", 1<<10)},
	} {
		pat, str := []byte(bc.pattern), []byte(bc.str)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(str)))
			steps := 0
			for b.Loop() {
				_, _, steps = Match(pat, str, false, MaxStars, -1)
			}
			b.ReportMetric(float64(steps), "steps/op")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(steps), "ns/step")
		})
	}
}

// TestClassSetMatchesClass checks globClassSet against globClass for every
// byte, over random classes made of class syntax, letters of both cases
// and bytes ≥ 0x80, with and without case.
func TestClassSetMatchesClass(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	for i := 0; i < 20000; i++ {
		pat := append([]byte{'['}, globtest.Rand(r, "^\\\\-]aZz0[\x80\xff", 8)...)
		for _, nocase := range []bool{false, true} {
			set, next := globClassSet(pat, 1, nocase)
			for c := 0; c < 256; c++ {
				wantNext, want := globClass(pat, 1, byte(c), nocase)
				if got := set[c>>6]&(1<<(c&63)) != 0; got != want || next != wantNext {
					t.Fatalf("class %q, byte %#x, nocase %v: set says %v (next %d); globClass %v (next %d)",
						pat, c, nocase, got, next, want, wantNext)
				}
			}
		}
	}
}

// TestEndsWithStar: a pattern whose last element is a * matches every
// extension of a string it matches; an escaped * or one inside a class
// that runs to the end is a byte, not that element.
func TestEndsWithStar(t *testing.T) {
	for pat, want := range map[string]bool{
		"tenant-a:*": true, "*": true, "a*b*": true, "a**": true, "[ab]*": true, `a\\*`: true,
		"": false, "a": false, "*x": false, `a\*`: false, "[ab*": false, "[*]": false, "a?": false,
	} {
		if got := EndsWithStar([]byte(pat)); got != want {
			t.Errorf("EndsWithStar(%q) = %v; want %v", pat, got, want)
		}
		if !want {
			continue
		}
		// every extension of a matching string matches
		for _, s := range []string{"tenant-a:x", "ab", "aXbY", `a\`, "b"} {
			m, _, _ := Match([]byte(pat), []byte(s), false, MaxStars, -1)
			if m2, _, _ := Match([]byte(pat), []byte(s+"tail*"), false, MaxStars, -1); m && !m2 {
				t.Errorf("%q matches %q but not %q", pat, s, s+"tail*")
			}
		}
	}
}
