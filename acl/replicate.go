package acl

import "slices"

// Replicated changes: in a Raft group the users change only through the
// log, and every node applies the same changes in the same order. A change
// is an argument vector, the same on every node:
//
//	setuser <name> <rule>…   ACL SETUSER
//	deluser <name>…          ACL DELUSER
//	load <file> <text>       ACL LOAD of an aclfile's text (file names it in errors)
//
// Apply is deterministic: the same set and the same change give the same
// set (password hashes are SHA-256, nothing is random or timed), so every
// replica holds the same users at the same index.

// Check reports the error Apply would return for the change, without
// changing anything, so that a node refuses a bad change before it reaches
// the log. The set may change between Check and Apply; Apply decides.
func (us *Users) Check(argv [][]byte) error {
	if len(argv) == 0 {
		return ErrBadChange
	}
	switch string(argv[0]) {
	case "setuser":
		if len(argv) < 2 {
			return ErrBadChange
		}
		name := string(argv[1])
		if hasSpaces(name) {
			return ErrUsernameSpaces
		}
		us.mu.RLock()
		defer us.mu.RUnlock()
		_, _, err := us.prepareLocked(name, ruleStrings(argv[2:]))
		return err
	case "deluser":
		if slices.ContainsFunc(argv[1:], func(n []byte) bool { return string(n) == DefaultUser }) {
			return ErrDeleteDefault
		}
		return nil
	case "load":
		if len(argv) != 3 {
			return ErrBadChange
		}
		return NewUsers(us.reg).LoadText(string(argv[1]), argv[2])
	}
	return ErrBadChange
}

// Apply carries out one change and returns ACL DELUSER's count (0 for the
// others). A change that fails changes nothing.
func (us *Users) Apply(argv [][]byte) (int64, error) {
	if len(argv) == 0 {
		return 0, ErrBadChange
	}
	switch string(argv[0]) {
	case "setuser":
		if len(argv) < 2 {
			return 0, ErrBadChange
		}
		return 0, us.SetUser(string(argv[1]), ruleStrings(argv[2:])...)
	case "deluser":
		names := ruleStrings(argv[1:])
		n, err := us.DelUser(names...)
		return int64(n), err
	case "load":
		if len(argv) != 3 {
			return 0, ErrBadChange
		}
		return 0, us.LoadText(string(argv[1]), argv[2])
	}
	return 0, ErrBadChange
}

func ruleStrings(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}
