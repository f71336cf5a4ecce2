//go:build !linux

package server

import (
	"errors"
	"net"
)

// errNoLoops is what starting event loops returns where there is no epoll.
var errNoLoops = errors.New("server: event loops need Linux")

// Event loops are built on epoll: elsewhere every client has its own
// goroutine and Config.EventLoops is ignored.

// loopsSupported says whether Config.EventLoops can take effect here.
const loopsSupported = false

type eventLoop struct {
	tick int64
	done chan struct{}
}

func startLoops(*Server, int) ([]*eventLoop, error) { return nil, errNoLoops }
func detach(net.Conn) (int, error)                  { return -1, errNoLoops }
func refuseNew(net.Listener)                        {}
func (l *eventLoop) add(*Conn)                      {}
func (l *eventLoop) kill(*Conn)                     {}
func (l *eventLoop) shutdown()                      {}
func (l *eventLoop) wake()                          {}
func (l *eventLoop) queuePush(*Conn)                {}
func (l *eventLoop) queueResume(*Conn)              {}
func (c *Conn) writeOut() bool                      { return false }
