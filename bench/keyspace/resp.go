package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/internal/resp"
)

// conn is a minimal pipelining RESP2 client on the shared codec
// (internal/resp): append commands, flush, read replies as Go values.
type conn struct {
	nc  net.Conn
	r   *bufio.Reader
	out []byte
	v   resp.Value
}

func dial(addr string) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, r: bufio.NewReaderSize(nc, 1<<16)}, nil
}

func (c *conn) close() { c.nc.Close() }

// add appends one command to the pipeline.
func (c *conn) add(args ...string) { c.out = resp.AppendCommand(c.out, args...) }

func (c *conn) flush() error {
	_, err := c.nc.Write(c.out)
	c.out = c.out[:0]
	return err
}

// errReply is an error reply from the server.
type errReply string

func (e errReply) Error() string { return string(e) }

// reply reads one reply: int64, string, []any, nil, or an errReply value
// (returned as the value, not as the error, so that a pipeline can go on).
func (c *conn) reply() (any, error) {
	if err := resp.Read(c.r, &c.v); err != nil {
		return nil, err
	}
	return goValue(&c.v)
}

// goValue converts a reply to the Go values reply returns.
func goValue(v *resp.Value) (any, error) {
	switch {
	case v.IsNull():
		return nil, nil
	case v.Kind == '+' || v.Kind == '$':
		return string(v.Text), nil
	case v.IsError():
		return errReply(v.Text), nil
	case v.IsInt():
		return v.Num, nil
	case v.Kind == '*':
		out := make([]any, len(v.Elems))
		for i := range v.Elems {
			e, err := goValue(&v.Elems[i])
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected reply %s", v)
}

// do sends one command and returns its reply; an error reply is an error.
func (c *conn) do(args ...string) (any, error) {
	c.add(args...)
	if err := c.flush(); err != nil {
		return nil, err
	}
	v, err := c.reply()
	if e, ok := v.(errReply); ok {
		return nil, e
	}
	return v, err
}

// info returns the fields of an INFO section.
func (c *conn) info(section string) (map[string]string, error) {
	v, err := c.do("INFO", section)
	if err != nil {
		return nil, err
	}
	s, ok := v.(string)
	if !ok {
		return nil, errors.New("INFO did not reply with a bulk string")
	}
	out := map[string]string{}
	for _, line := range strings.Split(s, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out, nil
}
