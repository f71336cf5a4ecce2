package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// conn is a minimal pipelining RESP2 client: append commands, flush, read
// replies. It understands the reply types the tool needs.
type conn struct {
	nc  net.Conn
	r   *bufio.Reader
	out []byte
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
func (c *conn) add(args ...string) {
	c.out = append(c.out, '*')
	c.out = strconv.AppendInt(c.out, int64(len(args)), 10)
	c.out = append(c.out, '\r', '\n')
	for _, a := range args {
		c.out = append(c.out, '$')
		c.out = strconv.AppendInt(c.out, int64(len(a)), 10)
		c.out = append(c.out, '\r', '\n')
		c.out = append(c.out, a...)
		c.out = append(c.out, '\r', '\n')
	}
}

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
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 {
		return nil, fmt.Errorf("short reply line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return errReply(body), nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, b); err != nil {
			return nil, err
		}
		return string(b[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = c.reply(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
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
