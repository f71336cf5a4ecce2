package acl

import "strings"

// cmdPerms is a user's command permissions, as Redis's selector keeps them:
// a bit per command id, the reserved "future commands" bit that only +@all
// sets (commands registered later are allowed, and rendering starts from
// +@all), the ALLCOMMANDS flag that any removal clears (the fast path of a
// check), and the first arguments allowed for commands that are otherwise
// not ("+select|0").
//
// A cmdPerms is a value owned by one user state; copy it with clone.
type cmdPerms struct {
	bits      []uint64
	future    bool
	all       bool
	firstArgs map[int][]string // by command id; nil when there are none
}

func (p *cmdPerms) clone() cmdPerms {
	c := *p
	c.bits = append([]uint64(nil), p.bits...)
	if p.firstArgs != nil {
		c.firstArgs = make(map[int][]string, len(p.firstArgs))
		for id, args := range p.firstArgs {
			c.firstArgs[id] = append([]string(nil), args...)
		}
	}
	return c
}

// bit reports whether command id is allowed by its bit alone. An id past
// the bitmap (a command registered after the bitmap was sized) takes the
// future bit.
func (p *cmdPerms) bit(id int) bool {
	w := id >> 6
	if w >= len(p.bits) {
		return p.future
	}
	return p.bits[w]&(1<<(id&63)) != 0
}

// setBit sets command id's bit; clearing one clears the ALLCOMMANDS flag
// (not the future bit), as ACLSetSelectorCommandBit does.
func (p *cmdPerms) setBit(id int, v bool) {
	w := id >> 6
	for w >= len(p.bits) {
		fill := uint64(0)
		if p.future {
			fill = ^uint64(0)
		}
		p.bits = append(p.bits, fill)
	}
	if v {
		p.bits[w] |= 1 << (id & 63)
	} else {
		p.bits[w] &^= 1 << (id & 63)
		p.all = false
	}
}

// setAll is +@all (v) or -@all: every bit, the future bit and the flag,
// and no first arguments.
func (p *cmdPerms) setAll(reg *Registry, v bool) {
	fill := uint64(0)
	if v {
		fill = ^uint64(0)
	}
	p.bits = make([]uint64, (reg.Len()+63)/64)
	for i := range p.bits {
		p.bits[i] = fill
	}
	p.future, p.all, p.firstArgs = v, v, nil
}

// change allows or denies a command and, for a command with subcommands,
// all of them; it forgets the command's allowed first arguments
// (ACLChangeSelectorPerm).
func (p *cmdPerms) change(c *Command, v bool) {
	p.setBit(c.ID, v)
	delete(p.firstArgs, c.ID)
	for _, s := range c.Subs {
		p.setBit(s.ID, v)
	}
}

// setCategory changes every command in category cat: a command in it
// changes with all its subcommands, and a subcommand in it changes alone
// (ACLSetSelectorCommandBitsForCategoryLogic).
func (p *cmdPerms) setCategory(reg *Registry, cat int, v bool) {
	var walk func(cmds []*Command)
	walk = func(cmds []*Command) {
		for _, c := range cmds {
			if c.cats&(1<<cat) != 0 {
				p.change(c, v)
			}
			walk(c.Subs)
		}
	}
	walk(reg.top)
}

// countCategory counts the commands (and subcommands) in cat that p allows
// and those it does not.
func (p *cmdPerms) countCategory(reg *Registry, cat int) (on, off int) {
	for _, c := range reg.all {
		if c.cats&(1<<cat) != 0 {
			if p.bit(c.ID) {
				on++
			} else {
				off++
			}
		}
	}
	return on, off
}

// addFirstArg allows command id with this first argument (compared in any
// letter case), once.
func (p *cmdPerms) addFirstArg(id int, arg string) {
	for _, a := range p.firstArgs[id] {
		if strings.EqualFold(a, arg) {
			return
		}
	}
	if p.firstArgs == nil {
		p.firstArgs = map[int][]string{}
	}
	p.firstArgs[id] = append(p.firstArgs[id], arg)
}

// sameBits reports whether p and q allow the same registered commands.
func (p *cmdPerms) sameBits(reg *Registry, q *cmdPerms) bool {
	for id := 0; id < reg.Len(); id++ {
		if p.bit(id) != q.bit(id) {
			return false
		}
	}
	return p.future == q.future
}
