package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/bench/internal/proc"
)

// The replication floor: what this machine's kernel, loopback TCP and disk
// charge for one log entry made durable on the three nodes of a group,
// with no Raft library, codec or state machine in the way. A leader
// process writes each entry to its own log file and fdatasyncs it while it
// sends the entry to two follower processes over loopback TCP; each
// follower writes the entry, fdatasyncs it and answers with 8 bytes. One
// entry is in flight at a time, as in a group whose window holds one. The
// three processes are this binary (floorEnv names the role), started on
// the servers' CPUs as a group's nodes are, and their user+system CPU per
// entry is what a real group pays at least for each of its entries: the
// part of a decision's CPU that only more decisions per entry can shrink.

const (
	floorEnv    = "SLUICE_BENCH_FLOOR" // "leader" or "follower": run as a process of the floor
	floorWarm   = 300                  // unmeasured entries before each row
	floorWindow = 16 << 20             // bytes of each log file, written zeros first, then over and over
	maxFloor    = 100_000
)

// floorSizes are the entry sizes measured. An entry of bench's RL.TOKEN
// runs holds about 21 bytes a decision, so these are about a group
// leader's entries under a light load (a few decisions), at P1 (about 40),
// P16 (500–800) and P64 (1,700–3,200).
var floorSizes = []int{128, 1 << 10, 16 << 10, 64 << 10}

type floorRow struct {
	size              int
	sync              bool
	entries           int
	wall              time.Duration // the measured entries' elapsed time
	leader, followers time.Duration // CPU: the leader's; the two followers' together
}

func (r floorRow) perEntry(d time.Duration) float64 {
	return float64(d.Nanoseconds()) / 1e3 / float64(r.entries)
}

// runFloor measures every size, with and without fdatasync, n entries
// each, and prints the table.
func runFloor(ctx context.Context, o *options, stdout io.Writer) error {
	if err := setupCPUs(o.pin, o.genCPUs); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "sluice-floor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var rows []floorRow
	for _, size := range floorSizes {
		for _, durable := range []bool{true, false} {
			r, err := floorRun(ctx, self, dir, size, durable, o.floor, o.procs)
			if err != nil {
				return err
			}
			rows = append(rows, r)
		}
	}
	printFloor(stdout, rows, o.floor)
	return nil
}

func printFloor(w io.Writer, rows []floorRow, n int) {
	fmt.Fprintf(w, "Replication floor: one entry made durable by a leader and 2 followers, one in flight, %d entries a row\n", n)
	fmt.Fprintf(w, "> %s\n\n", cpus.describe())
	fmt.Fprintln(w, "| entry bytes | fdatasync | µs wall an entry | µs CPU an entry, 3 processes | leader | each follower |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|")
	for _, r := range rows {
		s := "no"
		if r.sync {
			s = "yes"
		}
		fmt.Fprintf(w, "| %s | %s | %.1f | %.1f | %.1f | %.1f |\n", groupDigits(float64(r.size)), s, r.perEntry(r.wall),
			r.perEntry(r.leader+r.followers), r.perEntry(r.leader), r.perEntry(r.followers)/2)
	}
}

// floorRun starts two followers and a leader for one row and returns what
// the leader measured. A process that exits before its part is done fails
// the row with its log.
func floorRun(ctx context.Context, self, dir string, size int, durable bool, n, procs int) (floorRow, error) {
	var env []string
	if procs > 0 {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(procs))
	}
	var running []*server
	defer func() {
		for _, s := range running {
			s.stop()
		}
	}()
	// start runs one process of the floor and returns what it writes to
	// its -out file once its part is ready (a follower: its address) or
	// done (the leader: its figures).
	start := func(role, name string, limit time.Duration, args ...string) (*server, string, error) {
		out := filepath.Join(dir, name+".out")
		os.Remove(out)
		args = append([]string{"-dir", dir, "-name", name, "-sync=" + strconv.FormatBool(durable), "-out", out}, args...)
		s, err := spawn("floor "+role, self, args, append(env, floorEnv+"="+role), procs, "", filepath.Join(dir, name+".log"))
		if err != nil {
			return nil, "", err
		}
		running = append(running, s)
		line, err := waitFor(ctx, s, limit, "it wrote "+out, func() (string, error) {
			b, err := os.ReadFile(out)
			return strings.TrimSpace(string(b)), err
		})
		return s, line, err
	}
	var addrs, pids []string
	for i := range 2 {
		s, addr, err := start("follower", fmt.Sprintf("follower-%d", i), 10*time.Second)
		if err != nil {
			return floorRow{}, err
		}
		addrs = append(addrs, addr)
		pids = append(pids, strconv.Itoa(s.pid))
	}
	_, line, err := start("leader", "leader", 10*time.Minute, "-size", strconv.Itoa(size), "-n", strconv.Itoa(n),
		"-followers", strings.Join(addrs, ","), "-pids", strings.Join(pids, ","))
	if err != nil {
		return floorRow{}, err
	}
	var wall, leader, followers int64
	if _, err := fmt.Sscan(line, &wall, &leader, &followers); err != nil {
		return floorRow{}, fmt.Errorf("floor leader wrote %q: %w", line, err)
	}
	return floorRow{size: size, sync: durable, entries: n, wall: time.Duration(wall),
		leader: time.Duration(leader), followers: time.Duration(followers)}, nil
}

// writeWhole writes content to path through a rename, so that a reader sees
// all of it or nothing.
func writeWhole(path, content string) error {
	if err := os.WriteFile(path+".tmp", []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// floorChild runs one process of the floor (role from floorEnv) and
// returns its exit code.
func floorChild(role string, argv []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("floor "+role, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "")
	name := fs.String("name", role, "")
	durable := fs.Bool("sync", true, "")
	size := fs.Int("size", 128, "")
	n := fs.Int("n", 1000, "")
	followers := fs.String("followers", "", "")
	pids := fs.String("pids", "", "")
	out := fs.String("out", "", "")
	if err := fs.Parse(argv); err != nil {
		return 2
	}
	var err error
	switch role {
	case "follower":
		err = floorFollower(*dir, *name, *durable, *out)
	case "leader":
		err = floorLeader(*dir, *name, *durable, *size, *n, strings.Split(*followers, ","), strings.Split(*pids, ","), *out)
	default:
		err = fmt.Errorf("%s=%q: want leader or follower", floorEnv, role)
	}
	if err != nil {
		fmt.Fprintln(stderr, "floor "+role+":", err)
		return 1
	}
	return 0
}

// floorLog is a log file written zeros ahead, as sluice's log is, so that
// a sync flushes the entry's data and no file size or block allocation;
// it wraps around within floorWindow.
type floorLog struct {
	f    *os.File
	off  int64
	sync bool
}

func openFloorLog(path string, durable bool) (*floorLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	zeros := make([]byte, 1<<20)
	for i := 0; i < floorWindow>>20; i++ {
		if _, err := f.Write(zeros); err != nil {
			f.Close()
			return nil, err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	return &floorLog{f: f, sync: durable}, nil
}

func (l *floorLog) append(b []byte) error {
	if l.off+int64(len(b)) > floorWindow {
		l.off = 0
	}
	if _, err := l.f.WriteAt(b, l.off); err != nil {
		return err
	}
	l.off += int64(len(b))
	if !l.sync {
		return nil
	}
	return dataSync(l.f)
}

func floorFollower(dir, name string, durable bool, out string) error {
	log, err := openFloorLog(filepath.Join(dir, name+".wal"), durable)
	if err != nil {
		return err
	}
	defer log.f.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	if err := writeWhole(out, ln.Addr().String()); err != nil {
		return err
	}
	c, err := ln.Accept()
	if err != nil {
		return err
	}
	defer c.Close()
	var head [4]byte
	ack := make([]byte, 8)
	buf := make([]byte, 0, 1<<20)
	for {
		if _, err := io.ReadFull(c, head[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil // the leader is done
			}
			return err
		}
		size := int(binary.LittleEndian.Uint32(head[:]))
		if size > 1<<20 {
			return fmt.Errorf("an entry of %d bytes", size)
		}
		buf = buf[:size]
		if _, err := io.ReadFull(c, buf); err != nil {
			return err
		}
		if err := log.append(buf); err != nil {
			return err
		}
		if _, err := c.Write(ack); err != nil {
			return err
		}
	}
}

func floorLeader(dir, name string, durable bool, size, n int, addrs, pids []string, out string) error {
	if n < 1 || n > maxFloor || size < 1 || size > 1<<20 || len(addrs) != len(pids) {
		return fmt.Errorf("bad arguments: %d entries of %d bytes, %d followers, %d pids", n, size, len(addrs), len(pids))
	}
	log, err := openFloorLog(filepath.Join(dir, name+".wal"), durable)
	if err != nil {
		return err
	}
	defer log.f.Close()
	var conns []net.Conn
	for _, a := range addrs {
		c, err := net.Dial("tcp", a)
		if err != nil {
			return err
		}
		defer c.Close()
		conns = append(conns, c)
	}
	frame := make([]byte, 4+size)
	binary.LittleEndian.PutUint32(frame, uint32(size))
	for i := 4; i < len(frame); i++ {
		frame[i] = byte(i * 7)
	}
	errs := make([]error, len(conns))
	entry := func() error {
		var wg sync.WaitGroup
		for k, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := c.Write(frame); err != nil {
					errs[k] = err
					return
				}
				var ack [8]byte
				_, errs[k] = io.ReadFull(c, ack[:])
			}()
		}
		err := log.append(frame[4:])
		wg.Wait()
		return errors.Join(append(errs, err)...)
	}
	for range floorWarm {
		if err := entry(); err != nil {
			return err
		}
	}
	measure := func() (self, others time.Duration, err error) {
		if self, err = proc.CPU(os.Getpid()); err != nil {
			return 0, 0, err
		}
		for _, p := range pids {
			pid, err := strconv.Atoi(p)
			if err != nil {
				return 0, 0, err
			}
			d, err := proc.CPU(pid)
			if err != nil {
				return 0, 0, err
			}
			others += d
		}
		return self, others, nil
	}
	s0, o0, err := measure()
	if err != nil {
		return err
	}
	start := time.Now()
	for range n {
		if err := entry(); err != nil {
			return err
		}
	}
	wall := time.Since(start)
	s1, o1, err := measure()
	if err != nil {
		return err
	}
	return writeWhole(out, fmt.Sprintf("%d %d %d\n", wall.Nanoseconds(), (s1-s0).Nanoseconds(), (o1-o0).Nanoseconds()))
}
