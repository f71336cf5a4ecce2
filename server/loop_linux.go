//go:build linux

package server

import (
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Event loops (Linux): a few goroutines each wait in their own epoll for
// many clients, as Redis's single thread does, instead of one goroutine
// parked in the runtime's poller per client. A loop reads a ready client,
// runs its batch and writes the replies without a goroutine switch, and the
// clients ready at one wake-up share one epoll_wait: fewer system calls and
// no scheduler queue between a socket becoming readable and its batch
// running (measurements in bench/RESULTS.md).
//
// A loop writes the replies of a wake-up after every client it found ready
// has run (flush), as Redis writes its replies before it sleeps.
//
// A loop never blocks on a client: a reply that does not fit the socket
// stays in the client's buffer, the loop stops reading that client (its
// input waits in its own bounded buffer) and asks epoll for room to write.
// A Handler whose work waits (a replicated node's Raft log) suspends the
// batch or hands it to a goroutine (suspend.go): the loop serves its other
// clients meanwhile and takes the connection back at Resume.

const (
	loopEvents     = 256                    // events taken per epoll_wait
	loopCheckEvery = 100 * time.Millisecond // idle clients and kills are checked this often
)

// loopsSupported says whether Config.EventLoops can take effect here.
const loopsSupported = true

// eventLoop is one epoll instance and the clients it serves. Only the
// loop's goroutine touches conns and the clients' buffers; other goroutines
// hand it clients to add and to close through the queue, and wake it with
// the eventfd.
type eventLoop struct {
	srv     *Server
	epfd    int
	epf     *os.File              // epfd in the runtime's poller: the loop waits for it as a parked goroutine (wait)
	epr     syscall.RawConn       // epf's
	poll    func(fd uintptr) bool // l.pollNow, made once: a method value made per wait would allocate
	polled  int                   // what pollNow found: events ready
	pollErr error                 // and epoll_wait's error
	wakeFD  int
	events  []unix.EpollEvent
	conns   []*Conn // by descriptor
	tick    int64   // monotonic ns read once per wake-up
	done    chan struct{}

	mu      sync.Mutex
	adds    []*Conn
	kills   []*Conn
	pushes  []*Conn // connections with pushed bytes to write (push.go)
	resumes []*Conn // connections whose suspended batch may go on (suspend.go)
	parked  []*Conn // loop only: connections whose command in hand waits (park.go)
	unsent  []*Conn // loop only: connections whose replies of this wake-up are not yet written (flush)
	stop    bool
	dead    bool // finish closed the eventfd: nothing wakes the loop any more
}

func newEventLoop(s *Server) (*eventLoop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	wfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wfd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wfd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wfd)
		return nil, err
	}
	// An epoll descriptor is readable while events are ready in it: in
	// non-blocking mode, os.NewFile hands it to the runtime's poller.
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		unix.Close(wfd)
		return nil, err
	}
	epf := os.NewFile(uintptr(epfd), "epoll")
	epr, err := epf.SyscallConn()
	if err != nil {
		epf.Close()
		unix.Close(wfd)
		return nil, err
	}
	l := &eventLoop{srv: s, epfd: epfd, epf: epf, epr: epr, wakeFD: wfd, events: make([]unix.EpollEvent, loopEvents),
		done: make(chan struct{})}
	l.poll = l.pollNow
	return l, nil
}

// startLoops starts n event loops.
func startLoops(s *Server, n int) ([]*eventLoop, error) {
	loops := make([]*eventLoop, 0, n)
	for i := 0; i < n; i++ {
		l, err := newEventLoop(s)
		if err != nil {
			for _, o := range loops {
				o.shutdown()
			}
			return nil, err
		}
		loops = append(loops, l)
		go l.run()
	}
	return loops, nil
}

// detach takes a connection's descriptor out of the Go runtime's poller:
// it duplicates the descriptor (still non-blocking: the flag belongs to the
// socket) and closes the net.Conn, which removes the original from the
// runtime's epoll.
func detach(nc net.Conn) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1, errNoDescriptor
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, dupErr := -1, error(nil)
	if err := rc.Control(func(f uintptr) {
		fd, dupErr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return -1, err
	}
	if dupErr != nil {
		return -1, dupErr
	}
	nc.Close()
	return fd, nil
}

// refuseNew shuts a listening socket down at once (shutdown(2) on a
// listener resets the connections in its backlog and takes the port out of
// listening), where Close may wait for the goroutine in Accept.
func refuseNew(ln net.Listener) {
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return
	}
	if rc, err := sc.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.Shutdown(int(fd), unix.SHUT_RDWR) })
	}
}

// add hands the loop a client whose descriptor is detached.
func (l *eventLoop) add(c *Conn) { l.post(func() { l.adds = append(l.adds, c) }) }

// kill asks the loop to close c once the batch it may be running is done.
func (l *eventLoop) kill(c *Conn) { l.post(func() { l.kills = append(l.kills, c) }) }

// shutdown closes every client the loop holds and ends it.
func (l *eventLoop) shutdown() { l.post(func() { l.stop = true }) }

// post changes the loop's queue under its lock and wakes the loop.
func (l *eventLoop) post(change func()) {
	l.mu.Lock()
	change()
	if !l.dead {
		l.wake()
	}
	l.mu.Unlock()
}

// queueResume hands the loop a connection whose suspended batch may go
// on. It writes the eventfd only when the queue was empty: the loop reads
// the eventfd before it takes the queue, so a queue that holds a
// connection has a wake-up pending, and a commit that resumes many
// connections at once wakes the loop once.
func (l *eventLoop) queueResume(c *Conn) {
	l.mu.Lock()
	l.resumes = append(l.resumes, c)
	if len(l.resumes) == 1 && !l.dead {
		l.wake()
	}
	l.mu.Unlock()
}

func (l *eventLoop) wake() {
	one := [8]byte{1}
	unix.Write(l.wakeFD, one[:]) // EAGAIN: the counter is already set, the loop will wake
}

func (l *eventLoop) run() {
	defer close(l.done)
	last := monotonic()
	for {
		wait := -1
		if l.srv.idleTimeout() > 0 {
			wait = int(loopCheckEvery / time.Millisecond)
		}
		if len(l.parked) > 0 {
			wait = int(parkRetry / time.Millisecond)
		}
		n, err := l.wait(wait)
		if err != nil && err != unix.EINTR {
			l.srv.log.Error("epoll_wait failed; closing the loop's clients", "err", err)
			l.finish()
			return
		}
		l.tick = monotonic()
		for i := 0; i < n; i++ {
			ev := &l.events[i]
			fd := int(ev.Fd)
			if fd == l.wakeFD {
				var b [8]byte
				unix.Read(l.wakeFD, b[:])
				if l.control() {
					return
				}
				continue
			}
			if fd < len(l.conns) && l.conns[fd] != nil {
				l.serve(l.conns[fd])
			}
		}
		l.retryParked()
		l.flush()
		if l.tick-last >= int64(loopCheckEvery) {
			last = l.tick
			l.closeIdle()
		}
	}
}

// control takes the queued additions and kills. It reports true when the
// loop has stopped.
func (l *eventLoop) control() bool {
	l.mu.Lock()
	adds, kills, pushes, resumes, stop := l.adds, l.kills, l.pushes, l.resumes, l.stop
	l.adds, l.kills, l.pushes, l.resumes = nil, nil, nil, nil
	l.mu.Unlock()
	for _, c := range adds {
		for c.fd >= len(l.conns) {
			l.conns = append(l.conns, make([]*Conn, len(l.conns)+64)...)
		}
		l.conns[c.fd] = c
		c.lastIO = l.tick
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(c.fd)}
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
			l.srv.log.Error("epoll_ctl add failed; closing the client", "client", c.id, "err", err)
			l.close(c)
		}
	}
	for _, c := range kills {
		if c.fd >= 0 && c.fd < len(l.conns) && l.conns[c.fd] == c && !c.away() {
			l.close(c) // a suspended one closes at its Resume, its batch done (c.killed)
		}
	}
	for _, c := range pushes {
		if c.fd >= 0 && c.fd < len(l.conns) && l.conns[c.fd] == c {
			if c.away() {
				c.pushLater = true // its Out may be another goroutine's now
				continue
			}
			l.deliverPush(c)
		}
	}
	for _, c := range resumes {
		if c.fd >= 0 && c.fd < len(l.conns) && l.conns[c.fd] == c {
			l.resume(c)
		}
	}
	if stop {
		l.finish()
	}
	return stop
}

// finish closes every client the loop holds, then the loop's descriptors.
func (l *eventLoop) finish() {
	for _, c := range l.conns {
		switch {
		case c == nil:
		case c.handedOff:
			// Its goroutine still runs the Handler's calls: the socket
			// closes, and the connection stays listed (Shutdown's wait
			// times out) rather than its Close running beside them.
			l.conns[c.fd] = nil
			unix.Close(c.fd)
		default:
			l.close(c)
		}
	}
	l.epf.Close()
	l.mu.Lock()
	l.dead = true
	unix.Close(l.wakeFD)
	l.mu.Unlock()
}

// wait returns the ready events, waiting up to ms milliseconds (-1: no
// limit) for one. The loop asks epoll without blocking, and when nothing is
// ready it parks as a goroutine until the runtime's poller sees the epoll
// descriptor readable, rather than blocking its thread in epoll_wait: a
// thread blocked in a system call has its P taken by sysmon and handed to
// another thread, and gets one back as it returns, which at partial load
// costs more CPU than the requests (futex wake-ups, context switches).
func (l *eventLoop) wait(ms int) (int, error) {
	if ms >= 0 {
		l.epf.SetReadDeadline(time.Now().Add(time.Duration(ms) * time.Millisecond))
	}
	rerr := l.epr.Read(l.poll)
	if ms >= 0 {
		l.epf.SetReadDeadline(time.Time{})
	}
	switch {
	case errors.Is(rerr, os.ErrDeadlineExceeded):
		return 0, nil
	case rerr != nil:
		return 0, rerr
	}
	return l.polled, l.pollErr
}

// pollNow takes the ready events without waiting; it reports whether the
// loop has something to do (for RawConn.Read: false parks until epfd is
// readable).
func (l *eventLoop) pollNow(fd uintptr) bool {
	l.polled, l.pollErr = epollWaitNow(int(fd), l.events)
	return l.polled != 0 || l.pollErr != nil && l.pollErr != unix.EINTR
}

// epollWaitNow calls epoll_wait without a timeout, without telling the
// scheduler: it never blocks.
func epollWaitNow(epfd int, events []unix.EpollEvent) (int, error) {
	n, _, e := syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])),
		uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// closeIdle closes the clients that have neither sent nor taken a byte for
// the idle timeout.
func (l *eventLoop) closeIdle() {
	t := int64(l.srv.idleTimeout())
	if t <= 0 {
		return
	}
	for _, c := range l.conns {
		if c != nil && !c.away() && l.tick-c.lastIO > t {
			l.close(c)
		}
	}
}

// serve handles a readiness event of c: room to write its waiting
// replies, or input to read and run (the interest registered says which).
func (l *eventLoop) serve(c *Conn) {
	if c.away() {
		// Its input stays unread until Resume. Level-triggered, the event
		// would come back at every wait: turn it off (one-shot, nothing
		// asked) until then.
		if !c.disarmed {
			c.disarmed = true
			l.watch(c, unix.EPOLLONESHOT)
		}
		return
	}
	if c.waiting {
		if !c.writeOut() {
			l.close(c)
			return
		}
		if c.waiting {
			return
		}
		if c.closing {
			l.close(c)
			return
		}
		l.watch(c, unix.EPOLLIN)
		if c.start < c.end { // input left unrun while the replies waited
			l.runAndWrite(c)
		}
		return
	}
	if err := c.roomToRead(); err != nil {
		if err != errClientEvicted {
			c.protocolError(err)
			c.writeOut()
		}
		l.close(c)
		return
	}
	n, err := rawRead(c.fd, c.in[c.end:])
	switch {
	case n > 0:
		c.end += n
		c.lastIO = l.tick
		c.netIn.Add(int64(n))
		c.reads.Add(1)
		l.runAndWrite(c)
	case err == unix.EAGAIN || err == unix.EINTR:
	default: // end of input or a broken connection
		l.close(c)
	}
}

// retryParked runs the input of the parked connections again.
func (l *eventLoop) retryParked() {
	if len(l.parked) == 0 {
		return
	}
	list := l.parked
	l.parked = nil
	for _, c := range list {
		if c.fd >= 0 && c.fd < len(l.conns) && l.conns[c.fd] == c && c.parked {
			c.parked = false
			l.runAndWrite(c)
		}
	}
}

// runAndWrite runs the complete commands in c's input; flush writes its
// replies at the end of the wake-up.
func (l *eventLoop) runAndWrite(c *Conn) {
	if c.parked {
		return // waits for retryParked: its input stays unread
	}
	c.runBatch()
	l.afterBatch(c)
}

// afterBatch goes on from a batch that ran on the loop or that a
// goroutine ran for it: it hands the batch to a goroutine that may wait,
// leaves it suspended, or accounts and writes its replies.
func (l *eventLoop) afterBatch(c *Conn) {
	switch {
	case c.handOff:
		l.handOff(c)
		return
	case c.suspended:
		return // Resume brings it back (resume)
	}
	if c.parked {
		l.parked = append(l.parked, c)
	}
	if c.settle(0) == errClientEvicted || c.panicked && len(c.Out) == 0 {
		l.close(c)
		return
	}
	if !c.unsent {
		c.unsent = true
		l.unsent = append(l.unsent, c)
	}
}

// flush writes the replies runAndWrite left; replies that do not fit make
// the loop wait for room.
func (l *eventLoop) flush() {
	for i, c := range l.unsent {
		l.unsent[i] = nil
		c.unsent = false
		if c.fd < 0 || l.conns[c.fd] != c {
			continue // closed since it ran
		}
		if c.away() {
			continue // ran again and waits: its goroutine or Resume owns Out, written after (afterBatch)
		}
		if !c.writeOut() || c.panicked {
			l.close(c) // after a panic, the error is written once, as far as the socket takes it
			continue
		}
		if c.waiting {
			l.watch(c, unix.EPOLLOUT)
			continue
		}
		if c.closing {
			l.close(c)
		}
	}
	l.unsent = l.unsent[:0]
}

// handOff runs c's batch from the command in hand on a goroutine that may
// wait (Conn.HandOff); the loop takes c back at its resume. Until then the
// goroutine owns c.
func (l *eventLoop) handOff(c *Conn) {
	c.handOff, c.handedOff = false, true
	go func() {
		c.runBatch()
		l.queueResume(c)
	}()
}

// resume takes back a connection whose batch was suspended or handed off:
// the Handler ends the batch (after a Suspend), the loop writes the
// replies and runs the input that waited.
func (l *eventLoop) resume(c *Conn) {
	handedOff := c.handedOff
	c.suspended, c.handedOff = false, false
	if !handedOff {
		c.endBatch()
		if c.suspended {
			return // suspended again
		}
	}
	if c.disarmed {
		c.disarmed = false
		l.watch(c, unix.EPOLLIN)
		if c.fd < 0 {
			return
		}
	}
	if c.killed.Load() { // CLIENT KILL or Shutdown while it waited: its batch is done
		c.writeOut()
		l.close(c)
		return
	}
	if c.start < c.end && !c.closing && !c.waiting && !c.parked && !c.panicked {
		l.runAndWrite(c) // the input that waited, a command read again first
	} else {
		l.afterBatch(c)
	}
	if c.pushLater && c.fd >= 0 && !c.suspended {
		c.pushLater = false
		l.deliverPush(c)
	}
}

func (l *eventLoop) watch(c *Conn, events uint32) {
	ev := unix.EpollEvent{Events: events, Fd: int32(c.fd)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, c.fd, &ev); err != nil {
		l.close(c)
	}
}

// close closes c's descriptor and removes it from the server.
func (l *eventLoop) close(c *Conn) {
	if c.fd < 0 {
		return
	}
	c.stopPush()
	l.conns[c.fd] = nil
	unix.Close(c.fd) // also drops it from the epoll set: the loop holds its only descriptor
	c.fd = -1
	l.srv.removeConn(c)
}

// writeOut writes as much of c's replies as the socket takes. It reports
// false if the connection is broken; c.waiting says whether replies remain.
func (c *Conn) writeOut() bool {
	for c.outOff < len(c.Out) {
		n, err := rawWrite(c.fd, c.Out[c.outOff:])
		if n > 0 {
			c.outOff += n
			c.lastIO = c.loop.tick
			c.netOut.Add(int64(n))
			c.writes.Add(1)
			continue
		}
		switch err {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			c.waiting = true
			return true
		default:
			return false
		}
	}
	c.waiting = false
	c.outOff = 0
	c.dropOut()
	if c.push.unsent.Load() != 0 {
		c.push.unsent.Store(0) // a pushed connection's replies are all written
	}
	return true
}

// queuePush tells the loop that c has pushed bytes to write (push.go).
func (l *eventLoop) queuePush(c *Conn) { l.post(func() { l.pushes = append(l.pushes, c) }) }

// deliverPush appends c's pushes to its replies and writes what the
// socket takes, between batches. Requires that the loop owns c.
func (l *eventLoop) deliverPush(c *Conn) {
	b := c.push.take(nil)
	if len(b) == 0 {
		return
	}
	c.Out = append(c.Out, b...)
	if !c.waiting { // else the loop waits for room already, and serve writes them
		if !c.writeOut() {
			l.close(c)
			return
		}
		if c.waiting {
			l.watch(c, unix.EPOLLOUT)
		}
	}
	if c.waiting {
		c.push.unsent.Store(int64(len(c.Out) - c.outOff))
	}
}

// rawRead and rawWrite call read(2) and write(2) on a non-blocking socket
// without telling the scheduler: they never block.
func rawRead(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, unix.EINVAL
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func rawWrite(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

var monoStart = time.Now()

func monotonic() int64 { return int64(time.Since(monoStart)) }
