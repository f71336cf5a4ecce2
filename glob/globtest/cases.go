package globtest

import (
	"math/rand/v2"
	"strings"
)

// Cases are answers of redis-server 7.0.15 (KEYS pattern with the key
// set), which the commands package's TestScanMatchAgreesWithRedis checks again
// where Redis is there.
var Cases = []struct {
	Pattern, Str string
	Want         bool
}{
	{"", "", true},
	{"*", "", false},
	{"**", "", false},
	{"", "a", false},
	{"*", "abc", true},
	{"a*", "abc", true},
	{"*c", "abc", true},
	{"a*c", "ac", true},
	{"a*b*c", "axxbyyc", true},
	{"a*b*c", "axxbyy", false},
	{"?", "a", true},
	{"?", "ab", false},
	{"??", "a", false},
	{"a?c", "abc", true},
	{"[abc]", "b", true},
	{"[abc]", "d", false},
	{"[^abc]", "d", true},
	{"[^abc]", "a", false},
	{"[a-c]x", "bx", true},
	{"[c-a]x", "bx", true}, // a reversed range is swapped
	{"[]", "a", false},     // an empty class matches nothing
	{"[^]", "a", true},
	{"[ab", "a", true}, // a class without ] takes the rest of the pattern
	{"[ab", "b", true},
	{"[ab", "c", false},
	{"[", "a", false},
	{"[^", "a", true},
	{"[a-]", "]", true}, // the range from ']' to 'a', then no ]
	{"[a-]", "^", true},
	{"[a-]", "-", false},
	{"[\\]]", "]", true},
	{"[\\-a]", "-", true},
	{"[a\\", "\\", true},
	{"\\*", "*", true},
	{"\\*", "a", false},
	{"\\", "\\", true},
	{"a\\", "a\\", true},
	{"*\\?", "ab?", true},
	{"*a*a*a*a*a*a*b", strings.Repeat("a", 120), false},
	{"*a*a*a*a*a*a*b", strings.Repeat("a", 120) + "b", true},
	{"[\x80-a]", "\xff", true}, // signed chars: 0xff is -1, within -128…97
	{"[\x80-a]", "b", false},
	{"[a-\xff]", "\x80", false}, // -1…97
	{"[a-\xff]", "\x00", true},
}

// Alphabet holds every byte that means something in a pattern, letters
// of both cases, and bytes whose sign or case matters in a range.
const Alphabet = "ab*?[]^-\\AZz`\x00\x7f\x80\xff"

// Rand returns up to maxLen bytes drawn from alphabet.
func Rand(r *rand.Rand, alphabet string, maxLen int) []byte {
	b := make([]byte, r.IntN(maxLen+1))
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return b
}

// TestGlobMatchesReference compares Match with the transcription of
// Redis's code on 200,000 random small patterns and strings, with and
// without case, and with a small nesting limit so that the limit's
// behaviour is compared too.
// LongCase returns a string of up to 300 bytes and a pattern with up to
// three parts of up to 150 elements cut from it, often with one byte
// changed.
func LongCase(r *rand.Rand) (pat, str []byte) {
	str = Rand(r, "aab", 300)
	if r.IntN(2) == 0 {
		pat = append(pat, '*')
	}
	for parts, pos := r.IntN(3)+1, 0; parts > 0 && pos < len(str); parts-- {
		from := pos + r.IntN((len(str)-pos)/2+1)
		to := min(len(str), from+r.IntN(150))
		pos = to
		for _, c := range str[from:to] {
			switch r.IntN(12) {
			case 0:
				pat = append(pat, '?')
			case 1:
				pat = append(pat, "[ab]"...)
			case 2:
				pat = append(pat, '\\', c)
			default:
				pat = append(pat, c)
			}
		}
		pat = append(pat, '*')
	}
	if r.IntN(2) == 0 {
		pat = append(pat, str[len(str)-r.IntN(min(len(str), 70)+1):]...)
	}
	if j := r.IntN(len(pat) + 1); r.IntN(3) == 0 && j < len(pat) && (pat[j] == 'a' || pat[j] == 'b') {
		pat[j] ^= 'a' ^ 'b' // likely a mismatch
	}
	return pat, str
}
