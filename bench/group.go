package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A replicated group of sluice processes on 127.0.0.1, each in its own
// directory under a temporary one, started as docs/replication.md starts one by
// hand: the first node with --bootstrap yes, the others with --join.

const (
	maxGroupSize = 7
	groupStartup = 30 * time.Second // bound on a group's start, election included
)

// groupConfig says how to start a group.
type groupConfig struct {
	bin      string
	dir      string // each member's --dir and log live under it
	size     int
	fsync    bool
	logStore string // --raft-log-store; "": the server's default
}

// member is one node of a group.
type member struct {
	id   string
	resp string // host:port of its RESP port
	raft string // host:port of its Raft port
	dir  string
	life int     // how many times it was started
	srv  *server // the running process; nil while it is down
}

// group is a running replicated group.
type group struct {
	cfg     groupConfig
	members []*member
}

// replInfo is INFO replication of one node, as name → value.
type replInfo map[string]string

func (r replInfo) int(name string) int64 {
	v, _ := strconv.ParseInt(r[name], 10, 64)
	return v
}

func (r replInfo) float(name string) float64 {
	v, _ := strconv.ParseFloat(r[name], 64)
	return v
}

// startGroup starts a group of cfg.size nodes, waits until it has a ready
// leader that every node knows, and returns the group and that leader.
func startGroup(ctx context.Context, cfg groupConfig) (*group, *member, error) {
	if cfg.size < 1 || cfg.size > maxGroupSize {
		return nil, nil, fmt.Errorf("a group of %d nodes: want 1 to %d", cfg.size, maxGroupSize)
	}
	dir, err := os.MkdirTemp(cfg.dir, "group-")
	if err != nil {
		return nil, nil, err
	}
	cfg.dir = dir
	g, leader, err := tryGroup(ctx, cfg)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return g, leader, nil
}

// tryGroup starts the members one by one. Each one's first start lets the kernel choose its
// RESP and Raft ports (--port auto, --raft-bind 127.0.0.1:0) and reports them in its
// --ports-file; later starts keep them, as a restarted member must.
func tryGroup(ctx context.Context, cfg groupConfig) (*group, *member, error) {
	g := &group{cfg: cfg}
	for i := 0; i < cfg.size; i++ {
		id := "n" + strconv.Itoa(i+1)
		g.members = append(g.members, &member{id: id, dir: filepath.Join(cfg.dir, id)})
	}
	deadline := time.Now().Add(groupStartup)
	first := g.members[0]
	if err := g.launch(first, "--bootstrap", "yes"); err != nil {
		return nil, nil, err
	}
	if _, err := g.waitLeader(ctx, 1, time.Until(deadline)); err != nil {
		g.stop()
		return nil, nil, err
	}
	for _, m := range g.members[1:] {
		if err := g.launch(m, "--join", first.resp); err != nil {
			g.stop()
			return nil, nil, err
		}
	}
	leader, err := g.waitLeader(ctx, cfg.size, time.Until(deadline))
	if err != nil {
		g.stop()
		return nil, nil, err
	}
	return g, leader, nil
}

// launch starts m's process (again, on its existing --dir, if extra is
// empty) and waits until it answers PING.
func (g *group) launch(m *member, extra ...string) error {
	first := m.resp == ""
	s, err := g.spawnMember(m, extra...)
	if err != nil {
		return err
	}
	if first {
		ports, err := s.waitPorts(context.Background(), g.portsFile(m), 20*time.Second)
		if err != nil {
			s.stop()
			m.srv = nil
			return err
		}
		m.resp, m.raft, s.addr = ports["resp"], ports["raft"], ports["resp"]
	}
	if err := s.waitReady(context.Background(), 20*time.Second); err != nil {
		s.stop()
		m.srv = nil
		return err
	}
	return nil
}

func (g *group) portsFile(m *member) string { return filepath.Join(g.cfg.dir, m.id+".ports") }

// spawnMember starts m's process and returns at once: on its ports, or on ports the kernel
// chooses at its first start (launch reads them).
func (g *group) spawnMember(m *member, extra ...string) (*server, error) {
	port, raft := "auto", "127.0.0.1:0"
	if m.resp != "" {
		_, port, _ = net.SplitHostPort(m.resp)
		raft = m.raft
	}
	if err := os.Remove(g.portsFile(m)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	args := []string{"--port", port, "--bind", "127.0.0.1", "--loglevel", "warning",
		"--node-id", m.id, "--raft-bind", raft, "--dir", m.dir, "--ports-file", g.portsFile(m)}
	if !g.cfg.fsync {
		args = append(args, "--raft-fsync", "no")
	}
	if g.cfg.logStore != "" {
		args = append(args, "--raft-log-store", g.cfg.logStore)
	}
	args = append(args, extra...)
	m.life++
	logPath := filepath.Join(g.cfg.dir, fmt.Sprintf("%s.%d.log", m.id, m.life))
	s, err := spawn("sluice", g.cfg.bin, args, nil, 0, m.resp, logPath)
	if err != nil {
		return nil, err
	}
	m.srv = s
	return s, nil
}

// info reads INFO replication of a member.
func (m *member) info(timeout time.Duration) (replInfo, error) {
	s := &server{addr: m.resp}
	v, err := s.call(timeout, "INFO", "replication")
	if err != nil {
		return nil, err
	}
	if v.IsError() || v.Kind != '$' {
		return nil, fmt.Errorf("INFO replication at %s: %s", m.resp, v.String())
	}
	out := replInfo{}
	for _, line := range strings.Split(string(v.Text), "\n") {
		if k, val, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = val
		}
	}
	return out, nil
}

// waitLeader waits until one running member is a ready leader of a group
// of size voters and every running member names it, and returns it.
func (g *group) waitLeader(ctx context.Context, size int, limit time.Duration) (*member, error) {
	deadline := time.Now().Add(limit)
	var last string
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		leader, why := g.agreedLeader(size)
		if leader != nil {
			return leader, nil
		}
		last = why
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no ready leader of %d members within %v (%s); logs in %s", size, limit, last, g.cfg.dir)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// agreedLeader returns the ready leader every running member names, or why
// there is none.
func (g *group) agreedLeader(size int) (*member, string) {
	var leader *member
	leaderID := ""
	for _, m := range g.members {
		if m.srv == nil {
			continue
		}
		select {
		case <-m.srv.done:
			return nil, m.id + " exited; its log ends with:\n" + tail(m.srv.log)
		default:
		}
		r, err := m.info(time.Second)
		if err != nil {
			return nil, m.id + ": " + err.Error()
		}
		if r["role"] == "leader" && r["ready"] == "true" && r.int("members") == int64(size) {
			leader = m
		}
		switch {
		case r["leader_id"] == "":
			return nil, m.id + " knows no leader"
		case leaderID == "":
			leaderID = r["leader_id"]
		case leaderID != r["leader_id"]:
			return nil, "the members name different leaders"
		}
	}
	if leader == nil || leader.id != leaderID {
		return nil, "no ready leader with all members yet"
	}
	return leader, ""
}

// leader returns the member that names itself the ready leader, or nil.
func (g *group) leader() *member {
	for _, m := range g.members {
		if m.srv == nil {
			continue
		}
		if r, err := m.info(time.Second); err == nil && r["role"] == "leader" && r["ready"] == "true" {
			return m
		}
	}
	return nil
}

// followers returns the running members other than leader.
func (g *group) followers(leader *member) []*member {
	var out []*member
	for _, m := range g.members {
		if m != leader && m.srv != nil {
			out = append(out, m)
		}
	}
	return out
}

// pids returns the process ids of the running members.
func (g *group) pids() []int {
	var out []int
	for _, m := range g.members {
		if m.srv != nil {
			out = append(out, m.srv.pid)
		}
	}
	return out
}

// crash kills m with SIGKILL.
func (g *group) crash(m *member) {
	if m.srv != nil {
		m.srv.kill()
		m.srv = nil
	}
}

// stop stops every member, at once, and removes the group's directory.
func (g *group) stop() {
	g.stopMembers()
	os.RemoveAll(g.cfg.dir)
}

// stopMembers stops every member, at once.
func (g *group) stopMembers() {
	var wg sync.WaitGroup
	for _, m := range g.members {
		if s := m.srv; s != nil {
			m.srv = nil
			wg.Add(1)
			go func() { defer wg.Done(); s.stop() }()
		}
	}
	wg.Wait()
}
