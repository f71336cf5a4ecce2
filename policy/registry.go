package policy

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Registry holds the live policies and rules. Readers (every RL.CHECK and
// RL.MATCH) load one immutable Snapshot with an atomic pointer read and use
// it without a lock and without allocating; writers build a new Snapshot
// under a mutex and swap it in. The command-owned policies are a map and
// a persistent trie of the changes since (commandSet): a change copies the
// path to one name, not the table, so that a gateway may keep a policy per
// API key and define them at the rate of a pipeline.
//
// There are two owners of policies: commands (RL.POLICY SET/DEL; kept in
// snapshots and the Raft log) and the rules files (SetRules; read-only
// through commands). A file's policy takes precedence over a command's
// policy of the same name, which comes back if the file drops the name.
//
// The zero Registry is not usable; use NewRegistry.
//
// Once changes stop for foldIdle, the registry folds the trie of changes
// into the index (a snapshot of the same policies; foldWhenIdle), so that
// a lookup walks no trie in a table that changes in bursts.
type Registry struct {
	mu  sync.Mutex // serializes writers
	cur atomic.Pointer[Snapshot]
	// changes counts the command-owned changes; folding is set while a
	// fold is scheduled. Both guarded by mu.
	changes uint64
	folding bool
}

// foldIdle is how long after the last change the registry folds.
const foldIdle = 500 * time.Millisecond

// Snapshot is one immutable state of a Registry: a decision that uses one
// Snapshot never mixes old and new rules.
type Snapshot struct {
	commands commandSet
	files    map[string]*Policy // the rules' policies, over the commands'; nil: none
	rules    *RuleSet
	hidden   int // command-owned policies a file's of the same name hides
}

// NewRegistry returns a registry with no policies and no rules.
func NewRegistry() *Registry {
	r := &Registry{}
	r.cur.Store(&Snapshot{})
	return r
}

// Load returns the current snapshot. Safe for concurrent use.
func (r *Registry) Load() *Snapshot { return r.cur.Load() }

// Policy returns the live policy named name, or nil: one atomic load, a
// walk of a small trie and a probe of the index, no lock, no allocation.
// A pipeline's RL.CHECKs use Snapshot.Policies instead.
func (r *Registry) Policy(name []byte) *Policy { return r.cur.Load().Policy(name) }

// Rules returns the live rules (nil: none loaded).
func (r *Registry) Rules() *RuleSet { return r.cur.Load().rules }

// Policy returns the policy named name in s, or nil. It does not allocate.
func (s *Snapshot) Policy(name []byte) *Policy {
	if s.files != nil {
		if p := s.files[string(name)]; p != nil {
			return p
		}
	}
	return s.commands.get(name)
}

// Rules returns the rules of s (nil: none loaded).
func (s *Snapshot) Rules() *RuleSet { return s.rules }

// List returns the live policies whose names match (all if match is nil),
// sorted by name. The pointers are shared: the caller must not change them.
func (s *Snapshot) List(match func(name string) bool) []*Policy {
	out := make([]*Policy, 0, s.commands.n+len(s.files)-s.hidden)
	for name, p := range s.files {
		if match == nil || match(name) {
			out = append(out, p)
		}
	}
	s.commands.each(func(p *Policy) {
		if s.files[p.Name] == nil && (match == nil || match(p.Name)) {
			out = append(out, p)
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Counts returns the number of live policies, of those defined by
// commands and by files, and of command-owned policies that a file's
// policy of the same name hides.
func (s *Snapshot) Counts() (live, commands, files, hidden int) {
	return s.commands.n + len(s.files) - s.hidden, s.commands.n, len(s.files), s.hidden
}

// Commanded returns the command-owned policies, sorted by name (those a
// file hides included): what a snapshot keeps.
func (s *Snapshot) Commanded() []Policy {
	out := make([]Policy, 0, s.commands.n)
	s.commands.each(func(p *Policy) { out = append(out, *p) })
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// withCommand returns s with the command-owned policy p set (hidden if a
// file owns its name).
func (s *Snapshot) withCommand(p *Policy) *Snapshot {
	next := *s
	if s.files[p.Name] != nil && s.commands.getString(p.Name) == nil {
		next.hidden++
	}
	next.commands = s.commands.with(p)
	return &next
}

// withoutCommand returns s without the command-owned policy named name,
// and whether s held one.
func (s *Snapshot) withoutCommand(name string) (*Snapshot, bool) {
	cmds, ok := s.commands.without(name)
	if !ok {
		return s, false
	}
	next := *s
	next.commands = cmds
	if s.files[name] != nil {
		next.hidden--
	}
	return &next, true
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
	if lp := old.files[p.Name]; lp != nil && lp.FromFile() {
		return errReadOnly(p.Name, lp.File)
	}
	r.cur.Store(old.withCommand(hold(p)))
	r.changed()
	return nil
}

// Delete removes a command-owned policy and reports whether it existed.
// It refuses a name a rules file owns.
func (r *Registry) Delete(name string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.cur.Load()
	if lp := old.files[name]; lp != nil && lp.FromFile() {
		return false, errReadOnly(name, lp.File)
	}
	next, ok := old.withoutCommand(name)
	if ok {
		r.cur.Store(next)
		r.changed()
	}
	return ok, nil
}

// changed notes a command-owned change and schedules a fold. Requires
// r.mu.
func (r *Registry) changed() {
	r.changes++
	r.scheduleFold()
}

// scheduleFold schedules a fold if the current snapshot has a trie of
// changes and none is scheduled. Requires r.mu.
func (r *Registry) scheduleFold() {
	if r.folding || r.cur.Load().commands.delta.n == 0 {
		return
	}
	r.folding = true
	seen := r.changes
	time.AfterFunc(foldIdle, func() { r.foldWhenIdle(seen) })
}

// foldWhenIdle folds the current snapshot's trie of changes into its index
// if no change came since the one counted seen, else waits foldIdle more.
// The timer is the registry's only clock: when it fires changes what the
// lookups cost, never what they answer. The fold is built outside the
// lock, from an immutable snapshot, and installed only if that snapshot is
// still the current one.
func (r *Registry) foldWhenIdle(seen uint64) {
	r.mu.Lock()
	if r.changes != seen {
		seen = r.changes
		r.mu.Unlock()
		time.AfterFunc(foldIdle, func() { r.foldWhenIdle(seen) })
		return
	}
	cur := r.cur.Load()
	r.mu.Unlock()
	next := *cur
	next.commands = cur.commands.compacted()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.folding = false
	if r.cur.Load() != cur { // replaced meanwhile: fold the new one later
		r.scheduleFold()
		return
	}
	r.cur.Store(&next)
}

// ReplaceCommanded replaces every command-owned policy with ps (a snapshot
// being restored). It refuses the whole set if one is invalid, from a
// file, or named twice; a file's policy of the same name hides one.
func (r *Registry) ReplaceCommanded(ps []Policy) error {
	seen := make(map[string]bool, len(ps))
	all := make([]*Policy, len(ps))
	for i := range ps {
		p := &ps[i]
		if err := p.Validate(); err != nil {
			return err
		}
		if p.FromFile() {
			return errReadOnly(p.Name, p.File)
		}
		if seen[p.Name] {
			return errCorrupt("policy '%s' appears twice", p.Name)
		}
		seen[p.Name] = true
		all[i] = hold(*p)
	}
	cmds := commandSetOf(all)
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

// merge builds a snapshot from the command-owned policies and a rule set.
func merge(cmds commandSet, rs *RuleSet) *Snapshot {
	s := &Snapshot{commands: cmds, rules: rs}
	if ps := rs.Policies(); len(ps) > 0 {
		s.files = make(map[string]*Policy, len(ps))
		for _, p := range ps {
			s.files[p.Name] = p
			if cmds.getString(p.Name) != nil {
				s.hidden++
			}
		}
	}
	return s
}
