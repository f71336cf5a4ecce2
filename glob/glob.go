package glob

import (
	"bytes"
	"math"
)

// Glob patterns (SCAN MATCH, CONFIG GET, ACL key patterns) with the semantics of Redis 7.0's
// stringmatchlen, byte for byte:
//
//   - `*` any run of bytes, `?` any one byte, `\x` the byte x (a lone `\` at
//     the end is itself);
//   - `[abc]`, `[^abc]`, `[a-z]` classes: `\x` inside is x compared exactly
//     (even without case), a reversed range is swapped, `]` right after `[`
//     or `[^` ends an empty class, a class with no `]` takes the rest of the
//     pattern, and `[a-]…` is the range from `a` to `]`;
//   - range bounds compare as C's signed char, as on x86-64 Linux (bytes
//     0x80–0xff sort below 0x00), and without case as glibc's tolower does;
//   - the empty string matches only the empty pattern (so `*` does not
//     match it: SCAN and KEYS answer a bare `*` without matching);
//   - a pattern whose match must get past its 1001st run of stars with
//     bytes left to match fails, as Redis's recursion limit makes it.
//
// Redis finds a match by recursion at each `*` and, since 7.0.9, gives up as
// soon as the part after one `*` matches at no later position: then no
// longer match of an earlier `*` can help. Without that exit the work grows
// like C(len(str), stars) (`*a*a*a*a*a*a*b` against 120 `a`s runs for
// hours). With it, the search it makes comes down to this, which Match
// does without recursion: the part before the first `*` must match at the
// start; each part between two `*`s takes its leftmost occurrence after the
// previous one (a later one leaves less room to the rest, never more); the
// part after the last `*` must match at the end. Every element but `*`
// matches exactly one byte, so a part is found in O(len(str)) steps when it
// has at most 64 elements (bit-parallel, Shift-And), in O(len(str) ×
// elements) beyond, and the step count is reported so that a caller can
// bound the work.

// MaxStars is the number of runs of `*` a match can get past with bytes
// left to match: Redis's stringmatchlen stops recursing at nesting 1000.
const MaxStars = 1000

// StepLimit is the most steps (about 1 ns each) one command should spend
// matching: a SCAN call stops early rather than spend more, a pattern that
// needs more for a single key or parameter name is refused, and an ACL key
// pattern that cannot decide within it does not match (the key is denied).
const StepLimit = 2 << 20

// Match reports whether str matches pattern, as Redis's stringmatchlen
// with nesting limit maxStars (see the file comment), and how many steps
// that took: about one per byte of pattern and one per byte of str examined
// (a byte of str costs more against a part of more than 64 elements). When
// limit ≥ 0 and the answer needs more than limit steps, it stops with
// decided false and steps > limit. It allocates nothing and is safe for
// concurrent use.
func Match(pattern, str []byte, nocase bool, maxStars, limit int) (matched, decided bool, steps int) {
	if limit < 0 {
		limit = math.MaxInt
	}
	if matched, decided, steps = globSearch(pattern, str, nocase, maxStars, limit); steps > limit {
		return false, false, steps
	}
	return matched, decided, steps
}

// EndsWithStar reports whether pattern's last element is a `*` (not `\*`,
// nor a `*` inside a class that takes the rest of the pattern): then a
// string whose prefix matches pattern matches it too, since the final `*`
// takes whatever follows.
func EndsWithStar(pattern []byte) bool {
	star := false
	for p := 0; p < len(pattern); {
		if pattern[p] == '*' {
			star = true
			p++
			continue
		}
		star = false
		p, _ = globOne(pattern, p, 0, false)
	}
	return star
}

// globSearch is Match's search; it may answer after a few steps more
// than limit.
func globSearch(pattern, str []byte, nocase bool, maxStars, limit int) (matched, decided bool, steps int) {
	if len(str) == 0 {
		return len(pattern) == 0, true, 1
	}
	// The part before the first *, at the start.
	p, s := 0, 0
	for p < len(pattern) && pattern[p] != '*' {
		if s == len(str) {
			return false, true, steps + 1
		}
		next, ok := globOne(pattern, p, str[s], nocase)
		if steps += 3 * (next - p); steps > limit {
			return false, false, steps
		}
		if !ok {
			return false, true, steps
		}
		p, s = next, s+1
	}
	if p == len(pattern) {
		return s == len(str), true, steps + 1
	}
	for stars := 1; ; stars++ {
		// pattern[p] is a * or p is at the end.
		for p < len(pattern) && pattern[p] == '*' {
			p++
			steps++
		}
		if p == len(pattern) || s == len(str) {
			// A * at the end takes the rest (or nothing); with the
			// bytes used up, the pattern must be too.
			return p == len(pattern), true, steps
		}
		if stars > maxStars {
			return false, true, steps
		}
		end, n, plain := globPart(pattern, p)
		if steps += end - p; steps > limit {
			return false, false, steps
		}
		if n > len(str)-s {
			return false, true, steps // no room for the part
		}
		if end == len(pattern) {
			// The last part: it must end with str.
			m, ok, used := globAt(pattern, p, end, str[len(str)-n:], nocase, limit-steps)
			return m, ok, steps + used
		}
		var i, used int
		var ok bool
		switch {
		case plain && !nocase && n <= 32:
			i, ok, used = globIndexLiteral(pattern[p:end], str[s:], limit-steps)
		case n <= 64:
			i, ok, used = globIndexShiftAnd(pattern, p, end, n, str[s:], nocase, limit-steps)
		default:
			i, ok, used = globIndexNaive(pattern, p, end, n, str[s:], nocase, limit-steps)
		}
		if steps += used; !ok {
			return false, false, steps
		}
		if i < 0 {
			return false, true, steps
		}
		p, s = end, s+i+n
	}
}

// globPart returns where the part of pattern that starts at p ends (at the
// next * or the end), how many elements it has, and whether all of them are
// plain bytes (no ?, [ or \).
func globPart(pattern []byte, p int) (end, n int, plain bool) {
	plain = true
	for end = p; end < len(pattern) && pattern[end] != '*'; n++ {
		switch pattern[end] {
		case '?', '[', '\\':
			plain = false
		}
		end, _ = globOne(pattern, end, 0, false)
	}
	return end, n, plain
}

// globAt matches the part pattern[p:end] against str, which has as many
// bytes as the part has elements, with at most limit steps.
func globAt(pattern []byte, p, end int, str []byte, nocase bool, limit int) (matched, decided bool, steps int) {
	for s := 0; p < end; s++ {
		next, ok := globOne(pattern, p, str[s], nocase)
		if steps += 3 * (next - p); steps > limit { // an element costs about 3 ns, a step 1
			return false, false, steps
		}
		if !ok {
			return false, true, steps
		}
		p = next
	}
	return true, true, steps
}

// globIndexLiteral finds the plain part lit in str: its index or -1, within
// about limit steps (a step per 8 bytes searched: bytes.Index compares
// needles of up to 32 bytes with vector instructions).
func globIndexLiteral(lit, str []byte, limit int) (i int, decided bool, steps int) {
	if limit < len(str)/8 {
		if i = bytes.Index(str[:limit*8], lit); i >= 0 {
			return i, true, (i + len(lit)) / 8
		}
		return -1, false, limit + 1
	}
	if i = bytes.Index(str, lit); i >= 0 {
		return i, true, (i+len(lit))/8 + 1
	}
	return -1, true, len(str)/8 + 1
}

// globIndexShiftAnd finds the part pattern[p:end] of n ≤ 64 elements in
// str: the index of its leftmost occurrence or -1, with the bit-parallel
// Shift-And: bit k of the state says whether the first k+1 elements match
// the bytes that end here.
func globIndexShiftAnd(pattern []byte, p, end, n int, str []byte, nocase bool, limit int) (i int, decided bool, steps int) {
	var masks [256]uint64 // bit k of masks[c]: element k matches c
	steps = 32
	for k := uint(0); p < end; k++ {
		switch pattern[p] {
		case '?':
			for c := range masks {
				masks[c] |= 1 << k
			}
			steps += 64
			p++
		case '[':
			set, next := globClassSet(pattern, p+1, nocase)
			for c := range masks {
				if set[c>>6]&(1<<(c&63)) != 0 {
					masks[c] |= 1 << k
				}
			}
			steps += 512 * (next - p) // counted as 256 evaluations of the class (it costs less)
			p = next
		default:
			next, _ := globOne(pattern, p, 0, false)
			c := pattern[next-1]
			masks[c] |= 1 << k
			if nocase {
				masks[lower(c)] |= 1 << k
				masks[upper(c)] |= 1 << k
			}
			p = next
		}
	}
	if steps > limit {
		return -1, false, steps
	}
	window := min(len(str), limit-steps)
	last, d := uint64(1)<<(n-1), uint64(0)
	for j, c := range str[:window] {
		if d = (d<<1 | 1) & masks[c]; d&last != 0 {
			return j - n + 1, true, steps + j + 1
		}
	}
	return -1, window == len(str), steps + window + 1
}

// globIndexNaive finds the part pattern[p:end] of n elements in str by
// trying each position.
func globIndexNaive(pattern []byte, p, end, n int, str []byte, nocase bool, limit int) (i int, decided bool, steps int) {
	for i = 0; i+n <= len(str); i++ {
		m, ok, used := globAt(pattern, p, end, str[i:i+n], nocase, limit-steps)
		if steps += used; !ok {
			return -1, false, steps
		}
		if m {
			return i, true, steps
		}
	}
	return -1, true, steps + 1
}

// globOne matches the pattern element at pattern[p] (not a *) against c and
// returns where the next element starts.
func globOne(pattern []byte, p int, c byte, nocase bool) (next int, ok bool) {
	switch pattern[p] {
	case '?':
		return p + 1, true
	case '[':
		return globClass(pattern, p+1, c, nocase)
	case '\\':
		if p+1 < len(pattern) {
			p++
		}
	}
	return p + 1, fold(pattern[p], nocase) == fold(c, nocase)
}

// globClass matches the class whose body starts at pattern[p] against c and
// returns where the element after the class starts. A class without its ]
// ends with the pattern.
func globClass(pattern []byte, p int, c byte, nocase bool) (next int, ok bool) {
	not := p < len(pattern) && pattern[p] == '^'
	if not {
		p++
	}
	match := false
	for ; ; p++ {
		switch rest := len(pattern) - p; {
		case rest >= 2 && pattern[p] == '\\':
			p++
			if pattern[p] == c {
				match = true
			}
		case rest >= 1 && pattern[p] == ']':
			return p + 1, match != not
		case rest == 0:
			return p, match != not
		case rest >= 3 && pattern[p+1] == '-':
			start, end, x := int(int8(pattern[p])), int(int8(pattern[p+2])), int(int8(c))
			if start > end {
				start, end = end, start
			}
			if nocase {
				start, end, x = ctolower(start), ctolower(end), ctolower(x)
			}
			p += 2
			if x >= start && x <= end {
				match = true
			}
		default:
			if fold(pattern[p], nocase) == fold(c, nocase) {
				match = true
			}
		}
	}
}

// globClassSet is globClass for every byte at once: the set of bytes the
// class whose body starts at pattern[p] matches (bit c of word c>>6), and
// where the element after the class starts. Where a class ends does not
// depend on the byte matched, so one walk over the class serves all 256.
func globClassSet(pattern []byte, p int, nocase bool) (set [4]uint64, next int) {
	add := func(c byte) { set[c>>6] |= 1 << (c & 63) }
	not := p < len(pattern) && pattern[p] == '^'
	if not {
		p++
	}
	for ; next == 0; p++ {
		switch rest := len(pattern) - p; {
		case rest >= 2 && pattern[p] == '\\':
			p++
			add(pattern[p])
		case rest >= 1 && pattern[p] == ']':
			next = p + 1
		case rest == 0:
			next = p
		case rest >= 3 && pattern[p+1] == '-':
			start, end := int(int8(pattern[p])), int(int8(pattern[p+2]))
			if start > end {
				start, end = end, start
			}
			if nocase {
				start, end = ctolower(start), ctolower(end)
			}
			for c := 0; c < 256; c++ {
				x := int(int8(c))
				if nocase {
					x = ctolower(x)
				}
				if x >= start && x <= end {
					add(byte(c))
				}
			}
			p += 2
		default:
			add(pattern[p])
			if nocase {
				add(lower(pattern[p]))
				add(upper(lower(pattern[p])))
			}
		}
	}
	if not {
		for i := range set {
			set[i] = ^set[i]
		}
	}
	return set, next
}

// ctolower is glibc's tolower in the C locale for a signed char value:
// letters fold, -128…-2 come back as unsigned values, -1 (EOF) stays.
func ctolower(v int) int {
	switch {
	case v >= 'A' && v <= 'Z':
		return v + 'a' - 'A'
	case v < -1:
		return v + 256
	}
	return v
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func upper(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

func fold(c byte, nocase bool) byte {
	if nocase {
		return lower(c)
	}
	return c
}
