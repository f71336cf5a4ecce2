//go:build !linux

package main

import (
	"errors"
	"time"
)

// epollDriven reports whether this platform has driveEpoll: it has not,
// and the many-connection runs take a goroutine per connection.
const epollDriven = false

func driveEpoll(*load, []*worker, time.Duration, time.Duration, <-chan struct{}, measureMarks) (*tally, time.Duration, error) {
	return nil, 0, errors.New("the one-loop driver needs epoll (Linux)")
}
