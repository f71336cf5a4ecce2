package policy

import (
	"bytes"

	"github.com/sluice-rl/sluice/keyslot"
)

// SplitCheckKey reads a state key RL.CHECK made (AppendCheckKey): the
// policy's name, unescaped, and the subject. ok is false for any other
// key, a malformed escape or an unknown algorithm. The subject aliases
// key.
func SplitCheckKey(key []byte) (name string, subject []byte, ok bool) {
	rest, found := bytes.CutPrefix(key, []byte(prefixCheck))
	if !found {
		return "", nil, false
	}
	esc, rest, found := bytes.Cut(rest, []byte{':'})
	if !found {
		return "", nil, false
	}
	algo, subject, found := bytes.Cut(rest, []byte{':'})
	if !found {
		return "", nil, false
	}
	if _, known := ParseAlgo(string(algo)); !known {
		return "", nil, false
	}
	n, ok := unescapeName(esc)
	if !ok {
		return "", nil, false
	}
	return n, subject, true
}

// unescapeName reverses appendEscaped; ok is false for a malformed escape.
func unescapeName(s []byte) (string, bool) {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			out = append(out, c)
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		h, l := hexValue(s[i+1]), hexValue(s[i+2])
		if h < 0 || l < 0 {
			return "", false
		}
		out = append(out, byte(h<<4|l))
		i += 2
	}
	return string(out), true
}

// hexValue is an upper-case hex digit's value (appendEscaped writes
// upper case), else -1.
func hexValue(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// SplitOverrideKey reads an override's key (AppendOverrideKey): the
// policy's name, unescaped, and the subject. ok is false for any other key
// or a malformed escape. The subject aliases key.
func SplitOverrideKey(key []byte) (name string, subject []byte, ok bool) {
	rest, found := bytes.CutPrefix(key, []byte(prefixOverride))
	if !found {
		return "", nil, false
	}
	esc, subject, found := bytes.Cut(rest, []byte{':'})
	if !found {
		return "", nil, false
	}
	n, ok := unescapeName(esc)
	if !ok {
		return "", nil, false
	}
	return n, subject, true
}

// StoredSlot is the cluster slot a stored key lives in: an RL.CHECK state
// key (pol:<policy>:<algo>:<subject>) or an override
// (ovr:<policy>:<subject>) is in its subject's slot, where a cluster
// client sends RL.CHECK, so that all of a subject's policies and its
// override sit together; any other key is in its own (keyslot.Of).
func StoredSlot(key []byte) int {
	if len(key) > 4 && key[3] == ':' {
		if _, subject, ok := SplitCheckKey(key); ok {
			return keyslot.Of(subject)
		}
		if _, subject, ok := SplitOverrideKey(key); ok {
			return keyslot.Of(subject)
		}
	}
	return keyslot.Of(key)
}
