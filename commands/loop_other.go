//go:build !linux

package commands

import (
	"errors"
	"net"
)

// Event loops are built on epoll: elsewhere every client has its own
// goroutine and Config.EventLoops is ignored.

// loopsSupported says whether Config.EventLoops can take effect here.
const loopsSupported = false

type eventLoop struct {
	tick int64
	done chan struct{}
}

func startLoops(*Server, int) ([]*eventLoop, error) { return nil, errors.New("event loops need Linux") }
func detach(net.Conn) (int, error)                  { return -1, errors.New("event loops need Linux") }
func (l *eventLoop) add(*Client)                    {}
func (l *eventLoop) kill(*Client)                   {}
func (l *eventLoop) shutdown()                      {}
func (c *Client) writeOut() bool                    { return false }
