package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluice-rl/sluice/internal/resp"
)

// The many-connection closed loop from one epoll set. A goroutine per
// connection reads once more after every reply, finds nothing and parks:
// two reads and a goroutine switch for each request. With a thousand
// connections at pipeline 1 that made the generator's one core the limit
// before either server's (RESULTS.md, the sidecar regime). Here one locked
// thread waits on every connection at once and reads a socket only when
// epoll says a reply is there.

// epollDriven reports whether this platform has driveEpoll.
const epollDriven = true

// epConn is one connection's state in driveEpoll.
type epConn struct {
	w       *worker
	fd      int
	in      []byte // reply bytes read and not yet parsed
	src     bytes.Reader
	br      *bufio.Reader
	pending int       // requests of the last batch not yet answered
	t0      time.Time // when the last batch was written
	record  bool      // the last batch was sent in the measured part
	done    bool
}

// driveEpoll is drive for connections that are all served from one epoll
// set by one thread: the same phases, batches, checks and tallies (worker's
// own), the same marks and wall time. A request's latency runs from its
// batch's write to the return of the read that completed its reply.
func driveEpoll(l *load, ws []*worker, warmup, d time.Duration, hardStop <-chan struct{}, marks measureMarks) (*tally, time.Duration, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, 0, fmt.Errorf("epoll_create1: %w", err)
	}
	defer unix.Close(epfd)
	conns := make([]*epConn, 0, len(ws))
	var byFD []*epConn
	// One thread records every latency, so one histogram takes them all:
	// a thousand of them (200 KiB each) would miss the cache at every
	// record.
	hist := newHistogram()
	for _, w := range ws {
		fd, err := connFD(w)
		if err != nil {
			return nil, 0, err
		}
		w.t.hist = hist
		c := &epConn{w: w, fd: fd, br: bufio.NewReaderSize(nil, 16<<10), in: make([]byte, 0, 4096)}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			return nil, 0, fmt.Errorf("epoll_ctl: %w", err)
		}
		conns = append(conns, c)
		if fd >= len(byFD) {
			byFD = append(byFD, make([]*epConn, fd+1-len(byFD))...)
		}
		byFD[fd] = c
	}
	live := len(conns)
	for _, c := range conns {
		if !c.send(l) {
			live--
		}
	}
	events := make([]unix.EpollEvent, 256)
	began := time.Now()
	var start time.Time
loop:
	for live > 0 {
		now := time.Now()
		ph := l.phase.Load()
		switch {
		case ph == phaseWarmup && now.Sub(began) >= warmup:
			marks.start()
			start = time.Now()
			l.phase.CompareAndSwap(phaseWarmup, phaseMeasure)
		case ph == phaseMeasure && !l.counted && now.Sub(start) >= d:
			l.phase.Store(phaseStop)
		}
		select {
		case <-hardStop:
			l.aborted.Store(true)
			l.phase.Store(phaseStop)
			break loop
		default:
		}
		// Poll first: a thread that blocks in a system call has its P
		// handed to another thread, which then waits in the runtime's own
		// poller and wakes with the replies too.
		n, err := unix.EpollWait(epfd, events, 0)
		if n == 0 && err == nil {
			n, err = unix.EpollWait(epfd, events, 10)
		}
		if err != nil && err != unix.EINTR {
			return nil, 0, fmt.Errorf("epoll_wait: %w", err)
		}
		for i := 0; i < n; i++ {
			c := byFD[events[i].Fd]
			if c.done {
				continue
			}
			if !c.serve(l) {
				c.done = true
				live--
			}
		}
	}
	if start.IsZero() { // every connection ended during the warmup
		marks.start()
		start = time.Now()
	}
	elapsed := time.Since(start)
	marks.end()
	total := &tally{hist: hist, problems: map[string]*problem{}}
	for _, w := range ws {
		w.close()
		w.t.hist = nil // its latencies are in hist already
		total.merge(&w.t)
	}
	return total, elapsed, nil
}

// connFD returns the descriptor of w's connection (non-blocking, as Go
// keeps it); it stays valid while the connection is open.
func connFD(w *worker) (int, error) {
	sc, ok := w.conn.(syscall.Conn)
	if !ok {
		return 0, fmt.Errorf("%T has no descriptor", w.conn)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	fd := -1
	if err := rc.Control(func(f uintptr) { fd = int(f) }); err != nil {
		return 0, err
	}
	return fd, nil
}

// send writes c's next batch, unless the load has stopped or its budget is
// spent; it reports whether c goes on.
func (c *epConn) send(l *load) bool {
	w := c.w
	ph := l.phase.Load()
	if ph == phaseStop {
		return false
	}
	n := w.batch(ph)
	if n == 0 {
		return false
	}
	w.encodeBatch(n)
	c.pending, c.record, c.t0 = n, ph == phaseMeasure, time.Now()
	for out := w.out; len(out) > 0; {
		m, err := unix.Write(c.fd, out)
		switch {
		case err == unix.EAGAIN:
			// The socket's buffer is full: wait until it drains.
			pfd := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLOUT}}
			if _, err := unix.Poll(pfd, 1000); err != nil && err != unix.EINTR {
				w.lost(n, "connection: write: "+err.Error())
				return false
			}
		case err != nil:
			w.lost(n, "connection: write: "+err.Error())
			return false
		default:
			out = out[m:]
		}
	}
	return true
}

// serve reads what c's socket holds, accounts for every complete reply and
// sends the next batch once the last one is answered; it reports whether c
// goes on.
func (c *epConn) serve(l *load) bool {
	w := c.w
	if cap(c.in)-len(c.in) < 4096 {
		c.in = slices.Grow(c.in, 4096)
	}
	m, err := unix.Read(c.fd, c.in[len(c.in):cap(c.in)])
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		return true
	case err != nil:
		w.lost(c.pending, "connection: read: "+err.Error())
		return false
	case m == 0:
		w.lost(c.pending, "connection: read: "+io.EOF.Error())
		return false
	}
	arrived := time.Now()
	c.in = c.in[:len(c.in)+m]
	for c.pending > 0 {
		c.src.Reset(c.in)
		c.br.Reset(&c.src)
		err := resp.Read(c.br, &w.v)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break // the rest of the reply is still on its way
		}
		if err != nil {
			w.lost(c.pending, "connection: read: "+err.Error())
			return false
		}
		used := len(c.in) - c.src.Len() - c.br.Buffered()
		c.in = c.in[:copy(c.in, c.in[used:])]
		c.pending--
		if w.account(c.record, arrived.Sub(c.t0)) {
			w.t.fail(1, "NOSCRIPT: scripts are not reloaded by the many-connection driver")
			return false
		}
	}
	if c.pending > 0 {
		return true
	}
	if len(c.in) > 0 {
		w.t.fail(1, fmt.Sprintf("reply to %s: %d bytes no request asked for", l.sc.label, len(c.in)))
		return false
	}
	return c.send(l)
}
