package compat

import (
	"math/rand/v2"
	"testing"
)

// lockTokens are redis-py's tokens (uuid1().hex) and a user's own.
var lockTokens = []string{"6c4e3b1e8c8411ef9a2f0242ac120002", "7d5f4c2f9d9522f0ab30f353bd231113", "mine", "0"}

// lockGen plays redis-py's Lock: an acquire (SET token PX) now and then, and
// release, extend (added or replacing the TTL) and reacquire with the
// token held, another one, or odd arguments.
func lockGen(rng *rand.Rand, w *world, names []string) step {
	name := names[rng.IntN(len(names))]
	if rng.IntN(4) == 0 {
		w.set(name, lockTokens[rng.IntN(len(lockTokens))], 100+rng.Int64N(5000))
	}
	token := lockTokens[rng.IntN(len(lockTokens))]
	ms := itoa(rng.Int64N(5000))
	var s *Script
	var argv []string
	switch rng.IntN(3) {
	case 0:
		s, argv = Known.Lookup([]byte(RedisPyLockReleaseSHA1)), []string{token}
	case 1:
		replace := "0"
		if rng.IntN(2) == 0 {
			replace = "1"
		}
		s, argv = Known.Lookup([]byte(RedisPyLockExtendSHA1)), []string{token, pick(rng, 0.05, ms), pick(rng, 0.03, replace)}
	default:
		s, argv = Known.Lookup([]byte(RedisPyLockReacquireSHA1)), []string{token, pick(rng, 0.05, ms)}
	}
	keys := []string{name}
	if rng.IntN(100) == 0 {
		keys = nil
	}
	if rng.IntN(50) == 0 {
		argv = argv[:rng.IntN(len(argv)+1)]
	}
	return step{s: s, keys: keys, argv: argv, ro: rng.IntN(50) == 0}
}

func TestRedisPyLockScriptsMatchRedis(t *testing.T) {
	runDifferential(t, 3000, []string{"lock:a", "lock:b"}, lockGen)
}
