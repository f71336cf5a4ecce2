package acl

import (
	"math"
	"strings"
)

// Rendering a user the way Redis 7.0 does (ACLDescribeUser,
// ACLDescribeSelectorCommandRules): the same algorithm over the registry's
// commands, so that over Redis's own command table the text is Redis's,
// except for the order of the single-command rules at the end, which Redis
// takes from its hash table and sluice from the registration order.

// describeCommands renders the command permissions as the rules that
// rebuild them: +@all or -@all (after the future bit), then the categories
// that fit best, chosen greedily, then single commands and first
// arguments for what still differs.
func describeCommands(reg *Registry, p *cmdPerms) string {
	var b strings.Builder
	additive := !p.future
	var fake cmdPerms
	if additive {
		b.WriteString("-@all ")
		fake.setAll(reg, false)
	} else {
		b.WriteString("+@all ")
		fake.setAll(reg, true)
	}
	// temp holds what the categories chosen so far do not explain yet.
	temp := p.clone()
	applied := make([]bool, len(reg.cats))
	for {
		best, minDiff, maxSame := -1, math.MaxInt, 0
		for j := range reg.cats {
			if applied[j] {
				continue
			}
			on, off := temp.countCategory(reg, j)
			diff, same := off, on
			if !additive {
				diff, same = on, off
			}
			if same > diff && (diff < minDiff || (diff == minDiff && same > maxSame)) {
				best, minDiff, maxSame = j, diff, same
			}
		}
		if best < 0 {
			break
		}
		if additive {
			b.WriteString("+@")
		} else {
			b.WriteString("-@")
		}
		b.WriteString(reg.cats[best])
		b.WriteByte(' ')
		fake.setCategory(reg, best, additive)
		temp.setCategory(reg, best, !additive)
		applied[best] = true
	}
	describeSingles(reg, p, &fake, reg.top, &b)
	return strings.TrimSuffix(b.String(), " ")
}

// describeSingles writes +cmd or -cmd for each command whose bit in p
// differs from fake's, making fake follow (a command changes with its
// subcommands, which are visited next), and the first arguments of the
// commands p does not allow.
func describeSingles(reg *Registry, p, fake *cmdPerms, cmds []*Command, b *strings.Builder) {
	for _, c := range cmds {
		user := p.bit(c.ID)
		if user != fake.bit(c.ID) {
			if user {
				b.WriteByte('+')
			} else {
				b.WriteByte('-')
			}
			b.WriteString(c.Name)
			b.WriteByte(' ')
			fake.change(c, user)
		}
		describeSingles(reg, p, fake, c.Subs, b)
		if !user {
			for _, arg := range p.firstArgs[c.ID] {
				b.WriteString("+" + c.Name + "|" + arg + " ")
			}
		}
	}
}

// flagNames are the user flags in the order Redis prints them.
func (s *state) flagNames() []string {
	var out []string
	if s.enabled {
		out = append(out, "on")
	} else {
		out = append(out, "off")
	}
	if s.nopass {
		out = append(out, "nopass")
	}
	switch s.sanitize {
	case sanitizeSkip:
		out = append(out, "skip-sanitize-payload")
	case sanitizeOn:
		out = append(out, "sanitize-payload")
	}
	return out
}

// String is the pattern as a rule. Redis prints a pattern with both
// permissions as ~pattern, which for "*" reads back as allkeys (a
// different state: no pattern may follow it); sluice prints that one as
// %RW~* so that what it prints loads back to the same user.
func (k keyPattern) String() string {
	switch k.access {
	case Read:
		return "%R~" + k.pattern
	case Write:
		return "%W~" + k.pattern
	}
	if k.pattern == "*" {
		return "%RW~*"
	}
	return "~" + k.pattern
}

// describe is a user's rules as ACL LIST and the aclfile print them after
// "user <name> ".
func (s *state) describe(reg *Registry) string {
	var b strings.Builder
	for _, f := range s.flagNames() {
		b.WriteString(f + " ")
	}
	for _, h := range s.passwords {
		b.WriteString("#" + h + " ")
	}
	if s.allKeys {
		b.WriteString("~* ")
	} else {
		for _, k := range s.keys {
			b.WriteString(k.String() + " ")
		}
	}
	if s.allChannels {
		b.WriteString("&* ")
	} else {
		b.WriteString("resetchannels ")
		for _, c := range s.channels {
			b.WriteString("&" + c + " ")
		}
	}
	b.WriteString(describeCommands(reg, &s.cmds))
	return b.String()
}

// UserInfo is what ACL GETUSER replies, field by field, in Redis 7.0's
// order: flags, passwords, commands, keys, channels, selectors (always
// empty: sluice has no selectors).
type UserInfo struct {
	Flags     []string
	Passwords []string // hex SHA-256
	Commands  string
	Keys      string // "~*", or the patterns separated by spaces ("" for none)
	Channels  string // "&*", or the patterns with their & separated by spaces
}

func (s *state) info(reg *Registry) UserInfo {
	u := UserInfo{Flags: s.flagNames(), Passwords: append([]string{}, s.passwords...), Commands: describeCommands(reg, &s.cmds)}
	if s.allKeys {
		u.Keys = "~*"
	} else {
		parts := make([]string, len(s.keys))
		for i, k := range s.keys {
			parts[i] = k.String()
		}
		u.Keys = strings.Join(parts, " ")
	}
	if s.allChannels {
		u.Channels = "&*"
	} else {
		parts := make([]string, len(s.channels))
		for i, c := range s.channels {
			parts[i] = "&" + c
		}
		u.Channels = strings.Join(parts, " ")
	}
	return u
}
