package acl

import (
	"slices"
	"sync"
	"sync/atomic"
)

// DefaultUser is the name of the user every connection starts as.
const DefaultUser = "default"

// User is one user, the handle a connection keeps once authenticated. Its
// permissions change in place when ACL SETUSER changes the user, so that
// connections already authenticated follow, as in Redis.
type User struct {
	name    string
	perms   atomic.Pointer[Perms]
	deleted atomic.Bool
	st      state // guarded by the Users' mutex
}

// Name is the user's name.
func (u *User) Name() string { return u.name }

// Perms returns the user's permissions now. It is one atomic load: call it
// once per command (or batch) and check against what it returns.
func (u *User) Perms() *Perms { return u.perms.Load() }

// Deleted reports whether the user was removed (ACL DELUSER, or ACL LOAD
// of a file without it): its connections must be closed, as Redis closes
// them; meanwhile its Perms allow nothing.
func (u *User) Deleted() bool { return u.deleted.Load() }

// Users is the set of users over one registry. It always holds the default
// user.
//
// Concurrency: its methods are safe for concurrent use; a User's Perms may
// be read without any lock.
type Users struct {
	reg   *Registry
	mu    sync.RWMutex
	users map[string]*User
}

// NewUsers returns a set with the default user only: on, nopass, every key,
// every channel and every command ("user default on nopass ~* &* +@all").
func NewUsers(reg *Registry) *Users {
	us := &Users{reg: reg, users: map[string]*User{}}
	us.users[DefaultUser] = us.newUser(DefaultUser, defaultState(reg))
	return us
}

func defaultState(reg *Registry) state {
	s := newState(reg)
	s.cmds.setAll(reg, true)
	s.allKeys, s.allChannels, s.enabled, s.nopass = true, true, true, true
	return s
}

func (us *Users) newUser(name string, s state) *User {
	u := &User{name: name, st: s}
	u.perms.Store(compile(&s))
	return u
}

// Registry returns the command registry the users' rules refer to.
func (us *Users) Registry() *Registry { return us.reg }

// SetUser creates the user if it does not exist and applies the rules in
// order, all or nothing (ACL SETUSER): on the first rule that fails, the
// user stays as it was and the error is a *RuleError.
func (us *Users) SetUser(name string, rules ...string) error {
	if hasSpaces(name) {
		return ErrUsernameSpaces
	}
	us.mu.Lock()
	defer us.mu.Unlock()
	u, s, err := us.prepareLocked(name, rules)
	if err != nil {
		return err
	}
	if u == nil {
		us.users[name] = us.newUser(name, s)
		return nil
	}
	u.st = s
	u.perms.Store(compile(&s))
	return nil
}

// prepareLocked returns the user called name (nil if new) and the state
// the rules give it, without changing anything. The caller holds us.mu.
func (us *Users) prepareLocked(name string, rules []string) (*User, state, error) {
	u := us.users[name]
	var s state
	if u != nil {
		s = u.st.clone()
	} else {
		s = newState(us.reg)
	}
	for _, r := range rules {
		if err := s.apply(us.reg, r); err != nil {
			return nil, state{}, &RuleError{Rule: r, Err: err}
		}
	}
	return u, s, nil
}

// SetDefaultPassword is requirepass: the default user's passwords become
// this one, or none and nopass when it is "".
func (us *Users) SetDefaultPassword(password string) {
	rules := []string{"resetpass", "nopass"}
	if password != "" {
		rules = []string{"resetpass", ">" + password}
	}
	if err := us.SetUser(DefaultUser, rules...); err != nil {
		panic("acl: " + err.Error()) // these rules cannot fail
	}
}

// DelUser removes users and returns how many existed (ACL DELUSER). The
// default user cannot be removed: naming it removes nobody.
func (us *Users) DelUser(names ...string) (int, error) {
	if slices.Contains(names, DefaultUser) {
		return 0, ErrDeleteDefault
	}
	us.mu.Lock()
	defer us.mu.Unlock()
	n := 0
	for _, name := range names {
		if u := us.users[name]; u != nil {
			delete(us.users, name)
			u.retire()
			n++
		}
	}
	return n, nil
}

// retire marks a removed user: its connections must go.
func (u *User) retire() {
	u.deleted.Store(true)
	u.perms.Store(denyAll)
}

// Get returns a user, or nil.
func (us *Users) Get(name string) *User {
	us.mu.RLock()
	defer us.mu.RUnlock()
	return us.users[name]
}

// Default returns the default user.
func (us *Users) Default() *User { return us.Get(DefaultUser) }

// GetUser describes a user for ACL GETUSER.
func (us *Users) GetUser(name string) (UserInfo, error) {
	us.mu.RLock()
	defer us.mu.RUnlock()
	u := us.users[name]
	if u == nil {
		return UserInfo{}, noSuchUser(name)
	}
	return u.st.info(us.reg), nil
}

// Names returns the users' names in byte order (ACL USERS).
func (us *Users) Names() []string {
	us.mu.RLock()
	defer us.mu.RUnlock()
	return us.namesLocked()
}

func (us *Users) namesLocked() []string {
	names := make([]string, 0, len(us.users))
	for n := range us.users {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// List returns each user as ACL LIST prints it ("user default on nopass ~*
// &* +@all"), in byte order of the names.
func (us *Users) List() []string {
	us.mu.RLock()
	defer us.mu.RUnlock()
	var out []string
	for _, n := range us.namesLocked() {
		out = append(out, "user "+n+" "+us.users[n].st.describe(us.reg))
	}
	return out
}

// Authenticate returns the user if it exists, is on, and the password is
// one of its own (any password for a nopass user). Every failure is the
// same ErrWrongPass, whose text is Redis's reply. Passwords are compared
// in constant time.
func (us *Users) Authenticate(name, password string) (*User, error) {
	us.mu.RLock()
	u := us.users[name]
	var ok bool
	if u != nil && u.st.enabled {
		ok = u.st.nopass || checkPassword(u.st.passwords, password)
	}
	us.mu.RUnlock()
	if !ok {
		return nil, ErrWrongPass
	}
	return u, nil
}

// AuthDefault is AUTH <password>: the default user, unless it needs no
// password, which Redis answers with ErrNoDefaultPass.
func (us *Users) AuthDefault(password string) (*User, error) {
	us.mu.RLock()
	nopass := us.users[DefaultUser].st.nopass
	us.mu.RUnlock()
	if nopass {
		return nil, ErrNoDefaultPass
	}
	return us.Authenticate(DefaultUser, password)
}

// NeedsAuth reports whether a new connection must authenticate: the default
// user is off, or is not nopass (Redis's authRequired).
func (us *Users) NeedsAuth() bool {
	us.mu.RLock()
	defer us.mu.RUnlock()
	d := us.users[DefaultUser].st
	return !d.nopass || !d.enabled
}

// HasPasswords reports whether some enabled user has a password: protected
// mode applies only while none has.
func (us *Users) HasPasswords() bool {
	us.mu.RLock()
	defer us.mu.RUnlock()
	for _, u := range us.users {
		if u.st.enabled && len(u.st.passwords) > 0 {
			return true
		}
	}
	return false
}

// DryRun checks a command for a user without running it (ACL DRYRUN): the
// reply's text, "OK" or why not.
func (us *Users) DryRun(name string, c *Command, argv [][]byte) (string, error) {
	u := us.Get(name)
	if u == nil {
		return "", errUserNotFound(name)
	}
	return u.Perms().Check(c, argv).Message(c.Name, argv), nil
}

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
