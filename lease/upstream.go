package lease

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/internal/resp"
)

// upstream is a pool of RESP connections to the upstream sluice. Each call
// takes an idle connection (or dials one), writes its commands as one
// pipeline and reads their replies, all within the timeout; a connection
// that failed is closed, never reused. It is safe for concurrent use.
type upstream struct {
	addr    string
	timeout time.Duration
	// user and password authenticate each new connection (AUTH) when
	// password is set; user "" is the default user.
	user, password string

	mu   sync.Mutex
	idle []*upConn
}

type upConn struct {
	nc  net.Conn
	r   *bufio.Reader
	out []byte
	v   resp.Value
}

// maxIdle bounds the idle connections kept.
const maxIdle = 16

// errUnreachable is the outcome of a forwarded request while the upstream
// cannot be reached: nothing was applied, which CLUSTERDOWN says to
// clients that retry it.
var errUnreachable = errors.New("CLUSTERDOWN the upstream is unreachable")

// errAuth is the upstream's refusal of the tier's credentials: AUTH
// answered an error (WRONGPASS), or a command answered NOAUTH (the
// upstream needs a password the tier was not given). The tier treats it
// as an unreachable upstream: the stock is spent, then the fallback
// decides.
type errAuth string

func (e errAuth) Error() string {
	return "the upstream refused the tier's credentials (--upstream-user, --upstream-password): " + string(e)
}

// errNotSent is a failure before any command left the tier: no connection
// could be made (or authenticated). Nothing was applied.
type errNotSent struct{ err error }

func (e errNotSent) Error() string { return e.err.Error() }
func (e errNotSent) Unwrap() error { return e.err }

// do sends cmds as one pipeline and calls fn with each reply in order; the
// reply is only valid during the call. An errNotSent means nothing was
// sent; any other error that the connection failed, and some commands may
// have been carried out.
func (u *upstream) do(cmds [][][]byte, fn func(i int, v *resp.Value) error) error {
	c, err := u.get()
	if err != nil {
		return errNotSent{err}
	}
	if err := c.nc.SetDeadline(time.Now().Add(u.timeout)); err != nil { // the edge's clock, for the deadline
		c.nc.Close()
		return err
	}
	c.out = c.out[:0]
	for _, args := range cmds {
		c.out = resp.AppendArgs(c.out, args)
	}
	if _, err := c.nc.Write(c.out); err != nil {
		c.nc.Close()
		return err
	}
	for i := range cmds {
		if err := resp.Read(c.r, &c.v); err != nil {
			c.nc.Close()
			return err
		}
		if c.v.IsError() && bytes.HasPrefix(c.v.Text, []byte("NOAUTH")) {
			c.nc.Close()
			return errAuth(c.v.Text)
		}
		if err := fn(i, &c.v); err != nil {
			c.nc.Close()
			return err
		}
	}
	u.put(c)
	return nil
}

func (u *upstream) get() (*upConn, error) {
	u.mu.Lock()
	if n := len(u.idle); n > 0 {
		c := u.idle[n-1]
		u.idle = u.idle[:n-1]
		u.mu.Unlock()
		return c, nil
	}
	u.mu.Unlock()
	nc, err := net.DialTimeout("tcp", u.addr, u.timeout)
	if err != nil {
		return nil, err
	}
	c := &upConn{nc: nc, r: bufio.NewReaderSize(nc, 16<<10)}
	if u.password != "" {
		if err := u.auth(c); err != nil {
			nc.Close()
			return nil, err
		}
	}
	return c, nil
}

// auth sends AUTH [user] password on the new connection c.
func (u *upstream) auth(c *upConn) error {
	if err := c.nc.SetDeadline(time.Now().Add(u.timeout)); err != nil { // the edge's clock, for the deadline
		return err
	}
	args := [][]byte{[]byte("AUTH"), []byte(u.password)}
	if u.user != "" {
		args = [][]byte{[]byte("AUTH"), []byte(u.user), []byte(u.password)}
	}
	if _, err := c.nc.Write(resp.AppendArgs(c.out[:0], args)); err != nil {
		return err
	}
	if err := resp.Read(c.r, &c.v); err != nil {
		return err
	}
	if c.v.IsError() {
		return errAuth(c.v.Text)
	}
	return nil
}

func (u *upstream) put(c *upConn) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.idle) < maxIdle {
		u.idle = append(u.idle, c)
		return
	}
	c.nc.Close()
}

func (u *upstream) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, c := range u.idle {
		c.nc.Close()
	}
	u.idle = nil
}

// ints reads an array reply of at least n integers into dst; an error reply
// comes back as errReply.
func ints(v *resp.Value, dst []int64) error {
	if v.IsError() {
		return errReply(string(v.Text))
	}
	if v.Kind != '*' || len(v.Elems) < len(dst) {
		return fmt.Errorf("unexpected reply %s", v.String())
	}
	for i := range dst {
		e := &v.Elems[i]
		switch {
		case e.IsInt():
			dst[i] = e.Num
		case e.Kind == '#': // a RESP3 boolean
			dst[i] = 0
			if len(e.Text) > 0 && e.Text[0] == 't' {
				dst[i] = 1
			}
		default:
			return fmt.Errorf("unexpected reply %s", v.String())
		}
	}
	return nil
}

// errReply is an error reply of the upstream, relayed with its text.
type errReply string

func (e errReply) Error() string { return string(e) }

// rateArg writes an emission interval of ns nanoseconds as a rate the
// upstream parses back to exactly ns: 1/Xms when ns is whole milliseconds,
// else 1000000/Xms (X ms over a million units is X ns each).
func rateArg(ns int64) []byte {
	if ns%1e6 == 0 {
		return []byte("1/" + strconv.FormatInt(ns/1e6, 10) + "ms")
	}
	if ns <= math.MaxInt64/1_000_000 {
		return []byte("1000000/" + strconv.FormatInt(ns, 10) + "ms")
	}
	return []byte("1/" + strconv.FormatInt(ns/1e6, 10) + "ms") // beyond 2.5 h per unit: whole milliseconds
}

// durationArg writes a window or lease of ns nanoseconds (whole
// milliseconds, as the edge parsed it).
func durationArg(ns int64) []byte {
	return []byte(strconv.FormatInt(ns/1e6, 10) + "ms")
}
