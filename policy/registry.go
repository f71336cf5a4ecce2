package policy

import (
	"sort"
	"sync"
	"sync/atomic"
)

// Registry holds the live policies and rules. Readers (every RL.CHECK and
// RL.MATCH) load one immutable Snapshot with an atomic pointer read and use
// it without a lock and without allocating; writers build a new Snapshot
// (copy on write) under a mutex and swap it in. Policies are few (tiers,
// not subjects: overrides live in the store), so a write copies them all.
//
// There are two owners of policies: commands (RL.POLICY SET/DEL; kept in
// snapshots and the Raft log) and the rules files (SetRules; read-only
// through commands). A file's policy takes precedence over a command's
// policy of the same name, which comes back if the file drops the name.
//
// The zero Registry is not usable; use NewRegistry.
type Registry struct {
	mu  sync.Mutex // serializes writers
	cur atomic.Pointer[Snapshot]
}

// Snapshot is one immutable state of a Registry: a decision that uses one
// Snapshot never mixes old and new rules.
type Snapshot struct {
	live     map[string]*Policy // file's over command's
	commands map[string]*Policy
	rules    *RuleSet
}

// NewRegistry returns a registry with no policies and no rules.
func NewRegistry() *Registry {
	r := &Registry{}
	r.cur.Store(&Snapshot{live: map[string]*Policy{}, commands: map[string]*Policy{}})
	return r
}

// Load returns the current snapshot. Safe for concurrent use.
func (r *Registry) Load() *Snapshot { return r.cur.Load() }

// Policy returns the live policy named name, or nil. The hot path of
// RL.CHECK: one atomic load and one map lookup, no lock, no allocation.
func (r *Registry) Policy(name []byte) *Policy { return r.cur.Load().Policy(name) }

// Rules returns the live rules (nil: none loaded).
func (r *Registry) Rules() *RuleSet { return r.cur.Load().rules }

// Policy returns the policy named name in s, or nil. It does not allocate.
func (s *Snapshot) Policy(name []byte) *Policy { return s.live[string(name)] }

// Rules returns the rules of s (nil: none loaded).
func (s *Snapshot) Rules() *RuleSet { return s.rules }

// List returns the live policies whose names match (all if match is nil),
// sorted by name. The pointers are shared: the caller must not change them.
func (s *Snapshot) List(match func(name string) bool) []*Policy {
	out := make([]*Policy, 0, len(s.live))
	for name, p := range s.live {
		if match == nil || match(name) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Counts returns the number of live policies, of those defined by
// commands and by files, and of command-owned policies that a file's
// policy of the same name hides.
func (s *Snapshot) Counts() (live, commands, files, hidden int) {
	for name, p := range s.live {
		if p.FromFile() {
			files++
			if s.commands[name] != nil {
				hidden++
			}
		}
	}
	return len(s.live), len(s.commands), files, hidden
}

// Commanded returns the command-owned policies, sorted by name (those a
// file hides included): what a snapshot keeps.
func (s *Snapshot) Commanded() []Policy {
	out := make([]Policy, 0, len(s.commands))
	for _, p := range s.commands {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Set defines or replaces a command-owned policy. It refuses an invalid
// policy, one whose File is set, and a name a rules file owns.
func (r *Registry) Set(p Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if p.FromFile() {
		return errReadOnly(p.Name, p.File)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.cur.Load()
	if lp := old.live[p.Name]; lp != nil && lp.FromFile() {
		return errReadOnly(p.Name, lp.File)
	}
	cmds := cloneMap(old.commands, 1)
	cmds[p.Name] = &p
	r.cur.Store(merge(cmds, old.rules))
	return nil
}

// Delete removes a command-owned policy and reports whether it existed.
// It refuses a name a rules file owns.
func (r *Registry) Delete(name string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.cur.Load()
	if lp := old.live[name]; lp != nil && lp.FromFile() {
		return false, errReadOnly(name, lp.File)
	}
	if old.commands[name] == nil {
		return false, nil
	}
	cmds := cloneMap(old.commands, 0)
	delete(cmds, name)
	r.cur.Store(merge(cmds, old.rules))
	return true, nil
}

// ReplaceCommanded replaces every command-owned policy with ps (a snapshot
// being restored). It refuses the whole set if one is invalid, from a
// file, or named twice; a file's policy of the same name hides one.
func (r *Registry) ReplaceCommanded(ps []Policy) error {
	cmds := make(map[string]*Policy, len(ps))
	for i := range ps {
		p := ps[i]
		if err := p.Validate(); err != nil {
			return err
		}
		if p.FromFile() {
			return errReadOnly(p.Name, p.File)
		}
		if cmds[p.Name] != nil {
			return errCorrupt("policy '%s' appears twice", p.Name)
		}
		cmds[p.Name] = &p
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur.Store(merge(cmds, r.cur.Load().rules))
	return nil
}

// SetRules installs a loaded rule set (nil: none) and its policies, in one
// swap: a reader sees all of the old set or all of the new one.
func (r *Registry) SetRules(rs *RuleSet) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur.Store(merge(r.cur.Load().commands, rs))
}

// merge builds a snapshot from the command-owned policies (which it keeps,
// not copies) and a rule set.
func merge(cmds map[string]*Policy, rs *RuleSet) *Snapshot {
	live := cloneMap(cmds, len(rs.Policies()))
	for _, p := range rs.Policies() {
		live[p.Name] = p
	}
	return &Snapshot{live: live, commands: cmds, rules: rs}
}

func cloneMap(m map[string]*Policy, extra int) map[string]*Policy {
	out := make(map[string]*Policy, len(m)+extra)
	for k, v := range m {
		out[k] = v
	}
	return out
}
