package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"
)

// Lease is a holder's slot in a concurrency limit, as Acquire returns it. Its Result says
// whether the slot was granted. A granted lease ends when Release is called or, if its holder
// dies, when its lease time runs out. A Lease is safe for concurrent use.
type Lease struct {
	Result
	c        *Client
	key, id  string
	limit    int64
	duration time.Duration

	mu       sync.Mutex
	released bool
}

// Acquire asks for one of limit slots on key for the holder id, held for lease unless renewed
// or released (RL.ACQUIRE). An empty id is replaced by a random one. Acquiring again with the
// id of a live lease renews it and takes no new slot, so a retried Acquire is safe. The lease
// is granted when Lease.Allowed; when denied, RetryAfter is how long until the earliest lease
// ends.
func (c *Client) Acquire(ctx context.Context, key string, limit int64, lease time.Duration, id string) (*Lease, error) {
	if limit <= 0 || !validWindow(lease) {
		return nil, fmt.Errorf("%w: RL.ACQUIRE needs a positive limit and a lease of whole milliseconds (got %d, %v)",
			ErrInvalidLimit, limit, lease)
	}
	if id == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	l := &Lease{c: c, key: key, id: id, limit: limit, duration: lease}
	_, err := l.acquire(ctx)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Lease) acquire(ctx context.Context) (Result, error) {
	a := getArgv("RL.ACQUIRE", 4)
	a.key(l.key)
	a.int(l.limit)
	a.duration(l.duration)
	a.str(l.id)
	var r Result
	err := l.c.decide(ctx, a, &r)
	if err == nil {
		l.Result = r
	}
	return r, err
}

// ID returns the holder's id.
func (l *Lease) ID() string { return l.id }

// Key returns the concurrency limit's key.
func (l *Lease) Key() string { return l.key }

// Renew extends a granted lease to a full lease time from now, or asks again for one that was
// denied. It fails with ErrInvalidLimit after Release.
func (l *Lease) Renew(ctx context.Context) (Result, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return Result{}, fmt.Errorf("%w: lease %q on %q was released", ErrInvalidLimit, l.id, l.key)
	}
	return l.acquire(ctx)
}

// Release ends the lease (RL.RELEASE). It is idempotent: after one call that succeeded, or on a
// lease that was never granted, it does nothing and returns nil. If the server cannot be
// reached it returns the error and a later call tries again; the lease ends by itself anyway
// when its time runs out.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released || !l.Allowed {
		l.released = true
		return nil
	}
	a := getArgv("RL.RELEASE", 2)
	a.key(l.key)
	a.str(l.id)
	if _, err := l.c.integer(ctx, a); err != nil {
		return err
	}
	l.released = true
	return nil
}
