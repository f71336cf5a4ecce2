package policy

// Changes of the command-owned policies as a replicated group carries
// them in its log (cluster.Policies): argv "set" <EncodePolicies of one
// policy> or "del" <name>. Apply is deterministic whatever rules files a
// node holds: a command-owned policy that a file's policy of the same name
// hides is kept (hidden) rather than refused, so every node holds the same
// command-owned set at the same index; the node that takes RL.POLICY SET
// or DEL refuses a file-owned name before the change reaches the log.

// Change words.
const (
	ChangeSet = "set"
	ChangeDel = "del"
)

// SetChange returns the log change that defines or replaces p.
func SetChange(p Policy) [][]byte {
	return [][]byte{[]byte(ChangeSet), EncodePolicies(nil, []Policy{p})}
}

// DelChange returns the log change that deletes the policy named name.
func DelChange(name string) [][]byte {
	return [][]byte{[]byte(ChangeDel), []byte(name)}
}

// Apply carries out a change (SetChange, DelChange) on the command-owned
// policies and returns how many it deleted (0 or 1).
func (r *Registry) Apply(argv [][]byte) (int64, error) {
	if len(argv) != 2 {
		return 0, errCorrupt("a policy change of %d words", len(argv))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.cur.Load()
	switch string(argv[0]) {
	case ChangeSet:
		ps, err := DecodePolicies(argv[1])
		if err != nil {
			return 0, err
		}
		if len(ps) != 1 {
			return 0, errCorrupt("a policy change of %d policies", len(ps))
		}
		p := ps[0]
		if err := p.Validate(); err != nil {
			return 0, err
		}
		r.cur.Store(old.withCommand(hold(p)))
		r.changed()
		return 0, nil
	case ChangeDel:
		next, ok := old.withoutCommand(string(argv[1]))
		if !ok {
			return 0, nil
		}
		r.cur.Store(next)
		r.changed()
		return 1, nil
	}
	return 0, errCorrupt("an unknown policy change %q", argv[0])
}

// Encode returns the command-owned policies (EncodePolicies), for a
// snapshot.
func (r *Registry) Encode() []byte { return EncodePolicies(nil, r.Load().Commanded()) }

// Decode replaces the command-owned policies with an Encode's.
func (r *Registry) Decode(data []byte) error {
	ps, err := DecodePolicies(data)
	if err != nil {
		return err
	}
	return r.ReplaceCommanded(ps)
}

// AppendSidecar appends the command-owned policies' encoding
// (EncodePolicies) to dst: a single node's store keeps it beside its
// entries, in its snapshot file and append-only log (store.Sidecar).
func (r *Registry) AppendSidecar(dst []byte) []byte {
	return EncodePolicies(dst, r.Load().Commanded())
}

// LoadSidecar replaces the command-owned policies with those of an
// AppendSidecar encoding, or changes nothing and returns why not.
func (r *Registry) LoadSidecar(b []byte) error { return r.Decode(b) }

// Sidecar parts: the state of one command-owned policy, which the store's
// append-only log keeps for each RL.POLICY SET or DEL
// (store.PartedSidecar): partSet and an EncodePolicies of the policy, or
// partGone and the name of a policy that does not exist.
const (
	partSet  = 'S'
	partGone = 'D'
)

// AppendSidecarPart appends the state of the command-owned policy named
// name, as it is now, to dst.
func (r *Registry) AppendSidecarPart(dst, name []byte) []byte {
	if p := r.Load().commands.get(name); p != nil {
		return EncodePolicies(append(dst, partSet), []Policy{*p})
	}
	return append(append(dst, partGone), name...)
}

// LoadSidecarParts replaces the command-owned policies with those of base
// (an AppendSidecar encoding; nil: the policies as they are) updated by
// parts (AppendSidecarPart encodings) in order, or changes nothing and
// returns why not.
func (r *Registry) LoadSidecarParts(base []byte, parts [][]byte) error {
	var cmds commandSet
	if base != nil {
		ps, err := DecodePolicies(base)
		if err != nil {
			return err
		}
		all := make([]*Policy, len(ps))
		for i := range ps {
			all[i] = hold(ps[i])
		}
		cmds = commandSetOf(all)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if base == nil {
		cmds = r.cur.Load().commands
	}
	for _, b := range parts {
		if len(b) == 0 {
			return errCorrupt("an empty policy part")
		}
		switch b[0] {
		case partSet:
			ps, err := DecodePolicies(b[1:])
			if err != nil {
				return err
			}
			if len(ps) != 1 {
				return errCorrupt("a policy part of %d policies", len(ps))
			}
			cmds = cmds.with(hold(ps[0]))
		case partGone:
			if err := CheckName(string(b[1:])); err != nil {
				return errCorrupt("%v", err)
			}
			cmds, _ = cmds.without(string(b[1:]))
		default:
			return errCorrupt("an unknown policy part %q", b[0])
		}
	}
	r.cur.Store(merge(cmds, r.cur.Load().rules))
	r.changed()
	return nil
}

// CheckSet reports the error Set would return for p, changing nothing.
func (r *Registry) CheckSet(p Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if p.FromFile() {
		return errReadOnly(p.Name, p.File)
	}
	return r.checkNotFile(p.Name)
}

// CheckDel reports the error Delete would return for name, changing
// nothing.
func (r *Registry) CheckDel(name string) error { return r.checkNotFile(name) }

func (r *Registry) checkNotFile(name string) error {
	if lp := r.cur.Load().files[name]; lp != nil && lp.FromFile() {
		return errReadOnly(name, lp.File)
	}
	return nil
}
