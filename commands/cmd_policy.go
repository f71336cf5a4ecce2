package commands

import (
	"strconv"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/glob"
	"github.com/sluice-rl/sluice/policy"
)

// RL.POLICY: the named limits that RL.CHECK decides with. They live in the
// Handler's policy.Registry: commands change the command-owned ones, the
// rules files (--policies) own theirs, which are read-only here.

func init() {
	register(&command{
		name: "rl.policy", arity: -2, flags: flagAdmin, run: cmdPolicy, group: "rate-limit", since: "0.1.0",
		summary: "Defines, reads, deletes and lists named limits (policies) that RL.CHECK decides with; " +
			"RELOAD reads the rules files again.",
		complexity: "O(1) for GET, SET and DEL (O(log N) in the number of policies); O(N) for LIST",
		subs:       []string{"set", "get", "del", "list", "reload", "help"},
		// SET, DEL and RELOAD change every tenant's limits: @admin
		// @dangerous only (the flag), as CONFIG SET, so that +@policy does
		// not grant them; the command itself is outside @policy too, or
		// +@policy would grant its subcommands with it.
		subCategories: map[string][]string{
			"get":  {"admin", "dangerous", "policy"},
			"list": {"admin", "dangerous", "policy"},
			"help": {"admin", "dangerous", "policy"},
		},
	})
}

var policyHelp = []string{
	"RL.POLICY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"SET <name> <TOKEN|LEAKY|FIXED|SLIDING|LOG|CONCURRENCY> <p1> <p2> [SHADOW] [DESCRIPTION <text>]",
	"    Define or replace a policy, with the parameters of the RL.* command of its algorithm.",
	"GET <name>",
	"    Return a policy's fields.",
	"DEL <name>",
	"    Delete a policy defined by RL.POLICY SET; 1 if it existed.",
	"LIST [<pattern>]",
	"    Return the names of the policies, sorted, that match the glob pattern.",
	"RELOAD [FORCE]",
	"    Read the rules files (--policies) again. FORCE takes a set that defines no domain",
	"    in place of one that defines some.",
	"HELP",
	"    Print this help.",
}

// cmdPolicy: RL.POLICY SET|GET|DEL|LIST|RELOAD [FORCE]|HELP …
func cmdPolicy(s *session, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	n := len(args)
	if sub == "set" || sub == "del" { // changes that the append-only log keeps (SidecarRecorder)
		if err := s.h.writeRefusal(); err != nil {
			s.writeError(err)
			return
		}
		if s.h.cfg.AppendOnly != nil {
			at := len(s.conn.Out)
			defer func() { s.ack(at) }()
		}
	}
	switch {
	case sub == "set" && n >= 6:
		s.policySet(args[2:])
	case sub == "get" && n == 3:
		s.policyGet(args[2])
	case sub == "del" && n == 3:
		s.policyDel(args[2])
	case sub == "list" && n <= 3:
		s.policyList(args[2:])
	case sub == "reload" && n <= 3:
		s.policyReload(args[2:])
	case sub == "help" && n == 2:
		s.writeArray(len(policyHelp))
		for _, line := range policyHelp {
			s.writeSimple(line)
		}
	case sub == "set" || sub == "get" || sub == "del" || sub == "list" || sub == "reload" || sub == "help":
		s.writeError(errWrongArgs("rl.policy|" + sub))
	default:
		s.writeError(errUnknownSubcommand(args[1], "RL.POLICY"))
	}
}

// policySet: name ALGO p1 p2 [SHADOW] [DESCRIPTION text]
func (s *session) policySet(args [][]byte) {
	p, err := s.parsePolicy(args)
	if err == nil {
		if r := s.h.policyReplicator(); r != nil {
			if err = s.h.cfg.Policies.CheckSet(p); err == nil {
				_, err = r.ReplicatePolicy(s.h.clock.Now(), policy.SetChange(p))
			}
		} else if err = s.h.cfg.Policies.Set(p); err == nil {
			s.h.policyChanged(args[0])
		}
	}
	if err != nil {
		s.writeError(err)
		return
	}
	s.writeOK()
}

// parsePolicy reads RL.POLICY SET's arguments after the subcommand.
func (s *session) parsePolicy(args [][]byte) (policy.Policy, error) {
	p := policy.Policy{Name: string(args[0])}
	if err := policy.CheckName(p.Name); err != nil {
		return p, err
	}
	var err error
	if p.Limit, err = s.parseNamedLimit(args[1], args[2], args[3]); err != nil {
		return p, err
	}
	for i := 4; i < len(args); i++ {
		switch strings.ToUpper(string(args[i])) {
		case "SHADOW":
			p.Shadow = true
		case "DESCRIPTION":
			if i+1 == len(args) {
				return p, errSyntax
			}
			i++
			p.Description = string(args[i])
		default:
			return p, errSyntax
		}
	}
	return p, nil
}

// parseNamedLimit reads "ALGO p1 p2" with the parameters of the RL.*
// command of that algorithm (CONCURRENCY takes limit and lease), as
// RL.POLICY SET and RL.OVERRIDE SET take it.
func (s *session) parseNamedLimit(algoArg, p1, p2 []byte) (algorithms.Limit, error) {
	algo, ok := policy.ParseAlgo(string(algoArg))
	if !ok {
		return algorithms.Limit{}, errUnknownAlgo(algoArg)
	}
	if algo != algorithms.Concurrency {
		return s.parseLimit(algo, p1, p2)
	}
	l := algorithms.Limit{Algo: algo}
	var err error
	if l.Count, err = parsePositive(p1, "limit"); err == nil {
		l.Period, err = parseDuration(p2, "lease")
	}
	if err == nil && l.Count > s.h.cfg.LogMaxLimit {
		err = errAboveLogMax(s.h.cfg.LogMaxLimit)
	}
	return l, err
}

// policyGet replies a policy's fields as a map (RESP3) or a flat array of
// field-value pairs (RESP2), or a null for an unknown name.
func (s *session) policyGet(name []byte) {
	p := s.policyNamed(name)
	if p == nil {
		s.writeNull()
		return
	}
	source := "command"
	if p.FromFile() {
		source = p.File
	}
	shadow := int64(0)
	if p.Shadow {
		shadow = 1
	}
	s.writeMap(7)
	s.writeBulkString("name")
	s.writeBulkString(p.Name)
	s.writeBulkString("algorithm")
	s.writeBulkString(strings.ToUpper(policy.AlgoName(p.Limit.Algo)))
	s.writeBulkString("count")
	s.writeInt(p.Limit.Count)
	s.writeBulkString("period_ns")
	s.writeInt(p.Limit.Period)
	s.writeBulkString("shadow")
	s.writeInt(shadow)
	s.writeBulkString("description")
	s.writeBulkString(p.Description)
	s.writeBulkString("source")
	s.writeBulkString(source)
}

// policyDel deletes a command-owned policy: 1 if it existed, else 0.
func (s *session) policyDel(name []byte) {
	var ok bool
	var err error
	if r := s.h.policyReplicator(); r != nil {
		if err = s.h.cfg.Policies.CheckDel(string(name)); err == nil {
			var n int64
			n, err = r.ReplicatePolicy(s.h.clock.Now(), policy.DelChange(string(name)))
			ok = n > 0
		}
	} else if ok, err = s.h.cfg.Policies.Delete(string(name)); ok {
		s.h.policyChanged(name)
	}
	if err != nil {
		s.writeError(err)
		return
	}
	if ok {
		s.writeInt(1)
		return
	}
	s.writeInt(0)
}

// policyList replies the live policies' names that match the optional glob
// pattern (case-sensitive, as KEYS), sorted.
func (s *session) policyList(args [][]byte) {
	var pattern []byte
	if len(args) == 1 {
		pattern = args[0]
	}
	var err error
	steps := glob.StepLimit
	ps := s.h.cfg.Policies.Load().List(func(name string) bool {
		if pattern == nil || err != nil {
			return err == nil
		}
		m, decided, used := glob.Match(pattern, []byte(name), false, glob.MaxStars, steps)
		if !decided {
			err = errPatternTooComplex
		}
		steps -= used
		return m
	})
	if err != nil {
		s.writeError(err)
		return
	}
	s.writeArray(len(ps))
	for _, p := range ps {
		s.writeBulkString(p.Name)
	}
}

// reloadWait bounds how long RL.POLICY RELOAD holds its event loop for
// the load: past it the load goes on by itself, and the reply says so.
const reloadWait = time.Second

// policyReload: [FORCE]. It reads the rules files again; a refused set
// keeps the rules in force and its error is the reply. Without FORCE a set
// that defines no domain does not replace one that defines some.
func (s *session) policyReload(args [][]byte) {
	force := len(args) == 1
	if force && !strings.EqualFold(string(args[0]), "force") {
		s.writeError(errSyntax)
		return
	}
	rf := s.h.cfg.Rules
	if rf == nil {
		s.writeError(errNoRulesFiles)
		return
	}
	if err := rf.ReloadWithin(s.conn.Now(), force, reloadWait); err != nil {
		s.writeError(err)
		return
	}
	s.writeOK()
}

// policiesInfo is INFO's policies section.
func (h *Handler) policiesInfo() []Param {
	itoa := func(v int64) string { return strconv.FormatInt(v, 10) }
	live, cmds, files, hidden := h.cfg.Policies.Load().Counts()
	out := []Param{
		{"policies", strconv.Itoa(live)},
		{"policies_commands", strconv.Itoa(cmds)},
		{"policies_files", strconv.Itoa(files)},
		{"policies_hidden", strconv.Itoa(hidden)},
		{"policy_shadow_denied", itoa(h.shadowDenied.Load())},
	}
	out = append(out, h.leaderRulesParams()...)
	rf := h.cfg.Rules
	if rf == nil {
		return append(out, Param{"rules_files", ""})
	}
	st := rf.Status()
	status := "ok"
	if st.LastError != "" {
		status = "err"
	}
	return append(out,
		Param{"rules_files", strings.Join(st.Files, ",")},
		Param{"rules_paths", strings.Join(st.Paths, ",")},
		Param{"rules_hash", hexOf(st.Hash[:8])},
		Param{"rules_domains", strconv.Itoa(st.Domains)},
		Param{"rules_rules", strconv.Itoa(st.Rules)},
		Param{"rules_policies", strconv.Itoa(st.Policies)},
		Param{"rules_loads", itoa(st.Loads)},
		Param{"rules_failures", itoa(st.Failures)},
		Param{"rules_last_reload_status", status},
		Param{"rules_last_attempt_ms", itoa(st.LastAttempt / 1e6)},
		Param{"rules_last_success_ms", itoa(st.LastSuccess / 1e6)},
		Param{"rules_last_error", sanitize(st.LastError)},
	)
}

// hexOf writes b in lower-case hex.
func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// PolicyReplicator is the Cluster's part that replicates the command-defined
// policies through its log: ReplicatePolicy carries out a change
// (policy.SetChange, policy.DelChange) on every node and returns how many
// policies it deleted.
type PolicyReplicator interface {
	ReplicatePolicy(now int64, argv [][]byte) (int64, error)
}

// SidecarRecorder is a single node's keyspace that keeps the
// command-defined policies beside its state (the store: its snapshot file
// and append-only log, store.PartedSidecar). SidecarPartChanged appends the
// policy named name, as it is now (or its absence), to the append-only
// log; the batch's syncLog then makes it durable before the reply.
type SidecarRecorder interface {
	SidecarPartChanged(now int64, name []byte)
}

// policyChanged records a single node's command-defined policy named name
// after RL.POLICY SET or DEL changed it (a replicated node's log has it).
func (h *Handler) policyChanged(name []byte) {
	if r, ok := h.ks.(SidecarRecorder); ok {
		r.SidecarPartChanged(h.clock.Now(), name)
	}
}

// policyReplicator returns the Cluster, or nil on a single node.
func (h *Handler) policyReplicator() PolicyReplicator {
	if h.cfg.Cluster == nil {
		return nil
	}
	return h.cfg.Cluster
}

// RulesPublisher is the Cluster's part whose leader publishes its rules files' hash
// through the log (cluster.Node.LeaderRulesHash).
type RulesPublisher interface {
	LeaderRulesHash() ([32]byte, bool)
}

// leaderRulesParams are INFO policies' fields that compare this node's
// rules with the leader's, in a group: rules_hash_leader (the first 8
// bytes, as rules_hash) and rules_agree_with_leader (yes, no, or unknown
// before a leader has published its hash). A node without rules files has
// the empty rule set's hash.
func (h *Handler) leaderRulesParams() []Param {
	if h.cfg.Cluster == nil {
		return nil
	}
	leader, known := h.cfg.Cluster.LeaderRulesHash()
	if !known {
		return []Param{{"rules_hash_leader", ""}, {"rules_agree_with_leader", "unknown"}}
	}
	own := h.cfg.Policies.Rules().Hash()
	agree := "no"
	if own == leader {
		agree = "yes"
	}
	return []Param{{"rules_hash_leader", hexOf(leader[:8])}, {"rules_agree_with_leader", agree}}
}
