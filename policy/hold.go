package policy

import "unsafe"

// hold returns a copy of p whose name's bytes share its allocation, ahead
// of its fields: a lookup that compares the name and then reads the limit
// reads one cache line, not two. The Registry keeps the command-owned
// policies so, which a table of 100,000 looked up at random reads cold.
func hold(p Policy) *Policy {
	n := len(p.Name)
	var name []byte
	var q *Policy
	switch {
	case n <= 16:
		h := &struct {
			name [16]byte
			p    Policy
		}{p: p}
		name, q = h.name[:n], &h.p
	case n <= 32:
		h := &struct {
			name [32]byte
			p    Policy
		}{p: p}
		name, q = h.name[:n], &h.p
	case n <= 64:
		h := &struct {
			name [64]byte
			p    Policy
		}{p: p}
		name, q = h.name[:n], &h.p
	default: // a name longer than MaxNameLen keeps its own bytes
		if n > MaxNameLen {
			return &p
		}
		h := &struct {
			name [MaxNameLen]byte
			p    Policy
		}{p: p}
		name, q = h.name[:n], &h.p
	}
	if n > 0 {
		copy(name, p.Name)
		q.Name = unsafe.String(&name[0], n)
	}
	return q
}
