package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// When a node may start a new group. A node whose --dir holds no Raft
// state cannot tell a first start from a start after its data was wiped:
// bootstrapping after a wipe makes a second group with empty state, which
// hands every client a fresh burst. So --bootstrap yes asks the node's
// peers first, and --bootstrap force is the explicit way around that.

// BootstrapMode says whether a node with no Raft state starts a new group.
type BootstrapMode int

const (
	// NoBootstrap: wait to be added (--join, or RAFT.JOIN on a member).
	NoBootstrap BootstrapMode = iota
	// BootstrapIfNew (--bootstrap yes): start a new group with this node as
	// its only voter, unless this node's marker says it was a member, or a
	// peer (Config.Peers, Config.Join) is a member of a group or does not
	// answer within Config.PeerWait.
	BootstrapIfNew
	// BootstrapForce (--bootstrap force): start a new group regardless.
	BootstrapForce
)

// MarkerFile, in Config.Dir, holds the id of the node that was once a
// member of a group with this directory: written when the node bootstraps,
// joins through Config.Join, or restarts in a configuration that names it.
// It survives the loss of Dir/raft alone (removed by hand, or a disk that
// held only it), not a wipe of Dir.
const MarkerFile = "raft-member"

const markerFile = MarkerFile

func (n *Node) markerPath() string {
	if !n.fileStores {
		return ""
	}
	return filepath.Join(n.cfg.Dir, markerFile)
}

// writeMarker records that this node is a member of a group, and which
// group its directory holds (groupFile). Failing to write them is logged:
// they are safeguards, not state.
func (n *Node) writeMarker() {
	path := n.markerPath()
	if path == "" {
		return
	}
	n.writeGroupFile()
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == n.cfg.ID {
		return
	}
	if err := os.WriteFile(path, []byte(n.cfg.ID+"\n"), 0o644); err != nil {
		n.log.Warn("raft: could not record group membership", "path", path, "err", err)
	}
}

// formerMember returns the node id in this directory's marker, or "".
func (n *Node) formerMember() string {
	path := n.markerPath()
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// groupFile, in Config.Dir, names the group whose Raft state the
// directory holds: a data group's number (--cluster-group), "meta" for a
// sharded cluster's meta group, or "unsharded". A node started on it as
// another group would report that group's members and slots to the meta
// group as its own and append them to its log (shard.go), so that two
// groups would serve the same slots: Open refuses it (checkGroupDir).
// It is written with the membership marker, and at a start on existing
// Raft state (a directory from before the file existed).
const groupFile = "cluster-group"

// groupWord is what groupFile holds for a node of cfg.
func (c *Config) groupWord() string {
	switch {
	case c.Meta:
		return "meta"
	case c.Shard > 0:
		return strconv.Itoa(int(c.Shard))
	}
	return "unsharded"
}

// describeGroup says in words which group a groupFile's word names.
func describeGroup(word string) string {
	switch word {
	case "meta":
		return "the meta group of a sharded cluster"
	case "unsharded":
		return "an unsharded group (no --cluster-group)"
	}
	return "data group " + word + " of a sharded cluster (--cluster-group " + word + ")"
}

// CheckGroupDir refuses to start a data node of shard (0: an unsharded
// group's node) on dir when dir's groupFile names another group. A
// sharded process checks its data directory with it before it opens its
// meta replica; Open checks every node's.
func CheckGroupDir(dir string, shard uint16) error {
	return checkGroupDir(dir, (&Config{Shard: shard}).groupWord())
}

func checkGroupDir(dir, want string) error {
	b, err := os.ReadFile(filepath.Join(dir, groupFile))
	if err != nil {
		return nil // none yet: a new directory, or one from before the file
	}
	have := strings.TrimSpace(string(b))
	if have == want {
		return nil
	}
	return fmt.Errorf("%w: %s says that --dir %s holds the Raft state of %s, but this node was started as %s; "+
		"start it as the group its --dir belongs to, or give it another --dir", errWrongGroup,
		filepath.Join(dir, groupFile), dir, describeGroup(have), describeGroup(want))
}

// writeGroupFile records which group this node's directory holds.
func (n *Node) writeGroupFile() {
	if !n.fileStores {
		return
	}
	path, word := filepath.Join(n.cfg.Dir, groupFile), n.cfg.groupWord()
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == word {
		return
	}
	if err := os.WriteFile(path, []byte(word+"\n"), 0o644); err != nil {
		n.log.Warn("raft: could not record the directory's group", "path", path, "err", err)
	}
}

// recovery is the procedure for a member that lost its Raft state.
func (n *Node) recovery(through string) string {
	if through == "" {
		through = "<a live member's RESP address>"
	}
	return fmt.Sprintf("if this node lost its data, run RAFT.REMOVE %s on a live member, then start this node with --join %s "+
		"instead of --bootstrap (it receives the group's state); to start a new, empty group regardless, use --bootstrap force",
		n.cfg.ID, through)
}

// mayBootstrap decides whether this node, whose --dir holds no Raft state,
// may start a new group; nil means yes. It may wait up to cfg.PeerWait for
// the peers to answer.
func (n *Node) mayBootstrap() error {
	if n.cfg.Bootstrap == BootstrapForce {
		n.log.Warn("raft: --bootstrap force: starting a new group with this node as its only voter, without asking any peer")
		return nil
	}
	if id := n.formerMember(); id != "" {
		return fmt.Errorf("%w: %s says this node (%s) was a member of a group, but %s holds no Raft state; %s",
			errWasMember, filepath.Join(n.cfg.Dir, markerFile), id, filepath.Join(n.cfg.Dir, "raft"), n.recovery(n.cfg.Join))
	}
	peers := n.bootstrapPeers()
	if len(peers) == 0 {
		n.log.Info("raft: starting a new group; no --peers were given to ask whether one exists already", "dir", n.cfg.Dir)
		return nil
	}
	silent := map[string]error{}
	for _, p := range peers {
		silent[p] = nil
	}
	deadline := time.Now().Add(n.cfg.PeerWait)
	for {
		for p := range silent {
			members, err := askMembers(p, n.command("MEMBERS"), n.cfg.Password, n.cfg.RESPTLS)
			switch {
			case err != nil:
				silent[p] = err
			case len(members) == 0:
				delete(silent, p) // up, and in no group: it waits to join
			default:
				return fmt.Errorf("%w: peer %s is a member of a group (%s) and this node's --dir (%s) holds no Raft state, "+
					"so bootstrapping would start a second group with empty state; %s",
					errPeerInGroup, p, describeMembers(members), n.cfg.Dir, n.recovery(p))
			}
		}
		if len(silent) == 0 {
			n.log.Info("raft: starting a new group; every peer answered and none is in a group", "peers", strings.Join(peers, " "))
			return nil
		}
		if time.Now().After(deadline) {
			var why []string
			for _, p := range peers {
				if err, ok := silent[p]; ok {
					why = append(why, fmt.Sprintf("%s (%v)", p, err))
				}
			}
			return fmt.Errorf("%w: this node's --dir (%s) holds no Raft state and peers %s did not answer within %v, "+
				"so it cannot tell whether they hold a group it belonged to; start them first and then this node; %s",
				errPeersSilent, n.cfg.Dir, strings.Join(why, ", "), n.cfg.PeerWait, n.recovery(""))
		}
		select {
		case <-n.stop:
			return errors.New("cluster: stopped while asking the peers")
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// bootstrapPeers is Peers and Join, without duplicates and without this
// node's own RESP address.
func (n *Node) bootstrapPeers() []string {
	seen := map[string]bool{n.cfg.RESPAddr: true}
	var out []string
	for _, p := range append(append([]string(nil), n.cfg.Peers...), n.cfg.Join) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func describeMembers(members []peerMember) string {
	var parts []string
	leader := ""
	for _, m := range members {
		parts = append(parts, m.ID+" "+m.RaftAddr)
		if m.Role == "leader" {
			leader = m.ID
		}
	}
	sort.Strings(parts)
	s := "members " + strings.Join(parts, ", ")
	if leader != "" {
		s += "; leader " + leader
	}
	return s
}

// hasMember reports whether members lists id.
func hasMember(members []peerMember, id string) bool {
	for _, m := range members {
		if m.ID == id {
			return true
		}
	}
	return false
}
