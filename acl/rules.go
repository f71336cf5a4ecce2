package acl

import (
	"strings"
)

// The rules of ACL SETUSER, applied to a user's state exactly as Redis 7.0
// applies them (ACLSetUser, ACLSetSelector), except that selectors
// ("(...)") are refused. Keywords are compared in any letter case.

// sanitize is the state of the sanitize-payload flags, which sluice keeps
// for compatibility (it has no RESTORE) and prints as Redis does.
type sanitize uint8

const (
	sanitizeUnset sanitize = iota
	sanitizeOn             // sanitize-payload
	sanitizeSkip           // skip-sanitize-payload
)

// keyPattern is a ~, %R~, %W~ or %RW~ pattern.
type keyPattern struct {
	pattern string
	access  Access // Read|Write for ~
}

// state is everything a user is apart from its name. A state is a value:
// clone it before changing a copy.
type state struct {
	enabled     bool
	nopass      bool
	sanitize    sanitize
	passwords   []string // hex SHA-256, in the order added
	allKeys     bool
	keys        []keyPattern
	allChannels bool
	channels    []string
	cmds        cmdPerms
}

// newState is a new user's: off, no password, no keys, no channels, no
// commands.
func newState(reg *Registry) state {
	var s state
	s.cmds.setAll(reg, false)
	return s
}

func (s *state) clone() state {
	c := *s
	c.passwords = append([]string(nil), s.passwords...)
	c.keys = append([]keyPattern(nil), s.keys...)
	c.channels = append([]string(nil), s.channels...)
	c.cmds = s.cmds.clone()
	return c
}

// apply applies one rule. On error s may be partly changed: apply rules to
// a clone and keep it only if every rule applied.
func (s *state) apply(reg *Registry, rule string) error {
	switch {
	case rule == "":
		return nil // an empty rule does nothing, as in Redis
	case strings.EqualFold(rule, "on"):
		s.enabled = true
	case strings.EqualFold(rule, "off"):
		s.enabled = false
	case strings.EqualFold(rule, "skip-sanitize-payload"):
		s.sanitize = sanitizeSkip
	case strings.EqualFold(rule, "sanitize-payload"):
		s.sanitize = sanitizeOn
	case strings.EqualFold(rule, "nopass"):
		s.nopass, s.passwords = true, nil
	case strings.EqualFold(rule, "resetpass"):
		s.nopass, s.passwords = false, nil
	case rule[0] == '>' || rule[0] == '#':
		h := rule[1:]
		if rule[0] == '>' {
			h = HashPassword(rule[1:])
		} else if !validHash(h) {
			return ErrBadHash
		}
		if !contains(s.passwords, h) {
			s.passwords = append(s.passwords, h)
		}
		s.nopass = false
	case rule[0] == '<' || rule[0] == '!':
		h := rule[1:]
		if rule[0] == '<' {
			h = HashPassword(rule[1:])
		} else if !validHash(h) {
			return ErrBadHash
		}
		i := index(s.passwords, h)
		if i < 0 {
			return ErrNoSuchPassword
		}
		s.passwords = append(s.passwords[:i:i], s.passwords[i+1:]...)
	case rule[0] == '(' || strings.EqualFold(rule, "clearselectors"):
		if rule[0] == '(' {
			return ErrSelectors
		}
		// No selectors: nothing to clear.
	case strings.EqualFold(rule, "reset"):
		s.nopass, s.passwords = false, nil
		s.allKeys, s.keys = false, nil
		s.allChannels, s.channels = false, nil
		s.enabled = false
		s.sanitize = sanitizeOn
		s.cmds.setAll(reg, false)
	default:
		return s.applySelector(reg, rule)
	}
	return nil
}

// applySelector applies a rule about keys, channels or commands
// (ACLSetSelector).
func (s *state) applySelector(reg *Registry, rule string) error {
	switch {
	case strings.EqualFold(rule, "allkeys") || rule == "~*":
		s.allKeys, s.keys = true, nil
	case strings.EqualFold(rule, "resetkeys"):
		s.allKeys, s.keys = false, nil
	case strings.EqualFold(rule, "allchannels") || rule == "&*":
		s.allChannels, s.channels = true, nil
	case strings.EqualFold(rule, "resetchannels"):
		s.allChannels, s.channels = false, nil
	case strings.EqualFold(rule, "allcommands") || strings.EqualFold(rule, "+@all"):
		s.cmds.setAll(reg, true)
	case strings.EqualFold(rule, "nocommands") || strings.EqualFold(rule, "-@all"):
		s.cmds.setAll(reg, false)
	case rule[0] == '~' || rule[0] == '%':
		return s.addKeyPattern(rule)
	case rule[0] == '&':
		if s.allChannels {
			return ErrChannelAfterAll
		}
		if hasSpaces(rule[1:]) {
			return ErrSyntax
		}
		if !contains(s.channels, rule[1:]) {
			s.channels = append(s.channels, rule[1:])
		}
		s.allChannels = false
	case len(rule) >= 2 && (rule[0] == '+' || rule[0] == '-') && rule[1] == '@':
		cat := reg.category(rule[2:])
		if cat < 0 {
			return ErrUnknownCommand
		}
		s.cmds.setCategory(reg, cat, rule[0] == '+')
	case rule[0] == '+':
		return s.allowCommand(reg, rule[1:])
	case rule[0] == '-':
		c := reg.Lookup(rule[1:])
		if c == nil {
			return ErrUnknownCommand
		}
		s.cmds.change(c, false)
	default:
		return ErrSyntax
	}
	return nil
}

// addKeyPattern applies ~pattern, %R~pattern, %W~pattern or %RW~pattern.
// Like Redis, "%R" without a ~ is the empty pattern; "%" alone, which
// Redis accepts with no permission at all (and then cannot print), is a
// syntax error.
func (s *state) addKeyPattern(rule string) error {
	if s.allKeys {
		return ErrPatternAfterAllKeys
	}
	access, off := Read|Write, 1
	if rule[0] == '%' {
		access = 0
	flags:
		for ; off < len(rule); off++ {
			switch {
			case (rule[off] == 'R' || rule[off] == 'r') && access&Read == 0:
				access |= Read
			case (rule[off] == 'W' || rule[off] == 'w') && access&Write == 0:
				access |= Write
			case rule[off] == '~':
				off++
				break flags
			default:
				return ErrSyntax
			}
		}
		if access == 0 {
			return ErrSyntax
		}
	}
	pat := rule[off:]
	if hasSpaces(pat) {
		return ErrSyntax
	}
	for i := range s.keys {
		if s.keys[i].pattern == pat {
			s.keys[i].access |= access
			return nil
		}
	}
	s.keys = append(s.keys, keyPattern{pattern: pat, access: access})
	return nil
}

// allowCommand applies +name, +name|sub or +name|first-arg.
func (s *state) allowCommand(reg *Registry, name string) error {
	i := strings.LastIndexByte(name, '|')
	if i < 0 {
		c := reg.Lookup(name)
		if c == nil {
			return ErrUnknownCommand
		}
		s.cmds.change(c, true)
		return nil
	}
	c := reg.Lookup(name[:i])
	switch {
	case c == nil:
		return ErrUnknownCommand
	case c.Parent != nil:
		return ErrFirstArgOfSub
	case i == len(name)-1:
		return ErrSyntax
	case len(c.Subs) > 0:
		sub := reg.Lookup(name)
		if sub == nil {
			return ErrUnknownCommand
		}
		s.cmds.change(sub, true)
	case hasSpaces(name[i+1:]):
		// Redis takes it, and then prints a rule that does not load back.
		return ErrSyntax
	default:
		// A first argument of a command without subcommands, which
		// Redis 7 accepts with a deprecation warning ("+select|0").
		s.cmds.addFirstArg(c.ID, name[i+1:])
	}
	return nil
}

// hasSpaces reports whether s holds a byte C's isspace accepts, or NUL:
// such names and patterns are refused (ACLStringHasSpaces).
func hasSpaces(s string) bool {
	return strings.ContainsAny(s, " \t\n\v\f\r\x00")
}

func contains(list []string, s string) bool { return index(list, s) >= 0 }

func index(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}
