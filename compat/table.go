package compat

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"strings"
)

//go:embed scripts/*.lua
var scriptFiles embed.FS

// impl names a native implementation; Run dispatches on it with a switch
// rather than a function value, so that nothing a call passes escapes.
type impl uint8

const (
	implSpring impl = iota + 1
	implAllowN
	implAllowAtMost
	implFlexible
	implRLRIncrement
	implRLRGet
	implUluleIncr
	implUlulePeek
	implRLRIncrement5
	implRLRIncrement4
	implLimitsIncrExpire
	implLimitsMovingWindow
	implLimitsAcquire
	implLimitsClearKeys
	implLockRelease
	implLockExtend
	implLockReacquire
)

// Script is one known script text and its native implementation. Scripts
// are immutable and safe for concurrent use.
type Script struct {
	// SHA1 is the lower-case hex SHA1 of Text: what SCRIPT LOAD returns and
	// EVALSHA names.
	SHA1 string
	// Text is the exact text the library sends (compat/scripts/File).
	Text string
	File string
	// Library, Name and Versions say where the text comes from: the
	// library, the script's name in it, the releases that send this text.
	Library, Name, Versions string
	// Keys and Args are how many KEYS and ARGV the library passes. Run
	// accepts any numbers and answers what Redis would (Lua sees nil for a
	// missing KEYS[i] or ARGV[i]).
	Keys, Args int
	// ReadOnly is set for scripts that never write: EVAL_RO may run them.
	ReadOnly bool
	// Native is the sluice command that does the same job natively.
	Native string
	// ClearKeys marks limits' clear_keys script: its KEYS[1] is a pattern,
	// not a key; the server runs it as KEYS of the pattern and DEL.
	ClearKeys bool

	impl    impl
	spring  *springText
	gcra    *gcraText
	markers []string // words of the text that identify its family (Suggest)
}

// Run executes the script natively for c: it sets c.Reply and updates
// c.Keys as Redis 7.0 running the text would at the instant c.Now. It is
// pure (no clock, no I/O), deterministic and allocates nothing except
// when it builds an error reply.
func (s *Script) Run(c *Call) {
	c.Reply.reset()
	r := run{c: c, sha: s.SHA1, nowMs: unixMs(c.Now)}
	switch s.impl {
	case implSpring:
		runSpring(&r, s.spring)
	case implAllowN:
		runAllowN(&r, s.gcra)
	case implAllowAtMost:
		runAllowAtMost(&r, s.gcra)
	case implFlexible:
		runFlexible(&r)
	case implRLRIncrement:
		runRLRIncrement(&r)
	case implRLRGet:
		runRLRGet(&r)
	case implUluleIncr:
		runUluleIncr(&r)
	case implUlulePeek:
		runUlulePeek(&r)
	case implRLRIncrement5:
		runRLRIncrement5(&r)
	case implRLRIncrement4:
		runRLRIncrement4(&r)
	case implLimitsIncrExpire:
		runLimitsIncrExpire(&r)
	case implLimitsMovingWindow:
		runLimitsMovingWindow(&r)
	case implLimitsAcquire:
		runLimitsAcquire(&r)
	case implLimitsClearKeys:
		runLimitsClearKeys(&r)
	case implLockRelease:
		runLockRelease(&r)
	case implLockExtend:
		runLockExtend(&r)
	case implLockReacquire:
		runLockReacquire(&r)
	}
}

// Table is a set of known scripts, looked up by SHA1 or by text. It is
// immutable and safe for concurrent use.
type Table struct {
	bySHA map[[sha1.Size]byte]*Script
	list  []*Script
}

// Known is every supported script.
var Known = newTable(concat(springScripts, redisRateScripts, flexibleScripts, rateLimitRedisScripts, ululeScripts, limitsScripts, redisPyLockScripts))

func concat(lists ...[]*Script) []*Script {
	var all []*Script
	for _, l := range lists {
		all = append(all, l...)
	}
	return all
}

// newTable loads each script's text and checks it against its SHA1; a
// mismatch is a build defect and panics.
func newTable(scripts []*Script) *Table {
	t := &Table{bySHA: make(map[[sha1.Size]byte]*Script, len(scripts)), list: scripts}
	for _, s := range scripts {
		text, err := scriptFiles.ReadFile("scripts/" + s.File)
		if err != nil {
			panic(fmt.Sprintf("compat: %s: %v", s.File, err))
		}
		sum := sha1.Sum(text)
		if hex.EncodeToString(sum[:]) != s.SHA1 {
			panic(fmt.Sprintf("compat: %s hashes to %x, not %s", s.File, sum, s.SHA1))
		}
		if _, dup := t.bySHA[sum]; dup {
			panic("compat: " + s.SHA1 + " listed twice")
		}
		s.Text = string(text)
		t.bySHA[sum] = s
	}
	return t
}

// Lookup returns the script whose SHA1 is sha1hex (40 hex digits in either
// case, as EVALSHA accepts them), or nil.
func (t *Table) Lookup(sha1hex []byte) *Script {
	var sum [sha1.Size]byte
	if len(sha1hex) != 2*sha1.Size {
		return nil
	}
	for i := range sum {
		hi, ok1 := unhex(sha1hex[2*i])
		lo, ok2 := unhex(sha1hex[2*i+1])
		if !ok1 || !ok2 {
			return nil
		}
		sum[i] = hi<<4 | lo
	}
	return t.bySHA[sum]
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c|0x20 && c|0x20 <= 'f':
		return c | 0x20 - 'a' + 10, true
	}
	return 0, false
}

// LookupText returns the script whose text is exactly text, or nil.
func (t *Table) LookupText(text []byte) *Script { return t.bySHA[sha1.Sum(text)] }

// Scripts returns the table's scripts in a fixed order (by library).
func (t *Table) Scripts() []*Script { return t.list }

// Suggest returns the known script that an unknown text most resembles (a
// modified copy of a library's script shares its variable names), or nil
// if it resembles none. Its Native names the command to use instead.
func (t *Table) Suggest(text []byte) *Script {
	var best *Script
	bestScore := 0
	for _, s := range t.list {
		score := 0
		for _, m := range s.markers {
			if strings.Contains(string(text), m) {
				score++
			}
		}
		if score > bestScore {
			best, bestScore = s, score
		}
	}
	return best
}
