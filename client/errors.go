package client

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The client's errors. A server's error reply comes back as a *ServerError whose Kind is one of
// the first group (ErrServer for the others), so that errors.Is(err, client.ErrWrongType) works;
// errors.As still finds go-redis's redis.Error beneath it.
var (
	// ErrWrongType: the key holds another algorithm's state (WRONGTYPE).
	ErrWrongType = errors.New("sluice: key holds another algorithm's state")
	// ErrNoSuchPolicy: RL.CHECK named a policy the server does not have.
	ErrNoSuchPolicy = errors.New("sluice: no such policy")
	// ErrClusterDown: a replicated group had no leader; nothing was applied, retrying is safe.
	ErrClusterDown = errors.New("sluice: cluster down, nothing applied")
	// ErrOutcomeUnknown: leadership was lost mid-decision, or a forward to the leader broke
	// (UNKNOWN; TRYAGAIN from servers before it); the decision may or may not have counted.
	ErrOutcomeUnknown = errors.New("sluice: outcome unknown")
	// ErrTryAgain is ErrOutcomeUnknown's former name.
	//
	// Deprecated: use ErrOutcomeUnknown.
	ErrTryAgain = ErrOutcomeUnknown
	// ErrOOM: the server is at its memory cap and refuses new keys.
	ErrOOM = errors.New("sluice: out of memory")
	// ErrNoAuth: the connection has not authenticated (NOAUTH).
	ErrNoAuth = errors.New("sluice: authentication required")
	// ErrWrongPass: AUTH or HELLO gave a wrong password (WRONGPASS).
	ErrWrongPass = errors.New("sluice: wrong password")
	// ErrNoPerm: the connection's user may not run the command or touch the key (NOPERM).
	ErrNoPerm = errors.New("sluice: no permission")
	// ErrReadOnly: a write reached a read-only replica (READONLY).
	ErrReadOnly = errors.New("sluice: read-only replica")
	// ErrUnknownCommand: the server does not know the command or subcommand (an older server).
	ErrUnknownCommand = errors.New("sluice: unknown command")
	// ErrMaxClients: the server has as many connections as --maxclients allows.
	ErrMaxClients = errors.New("sluice: max number of clients reached")
	// ErrServer: any other error reply (bad arguments, a limit above log-max-limit …).
	ErrServer = errors.New("sluice: error reply")

	// ErrInvalidRate: a Rate that is not positive, or that the server's syntax cannot carry.
	ErrInvalidRate = errors.New("sluice: invalid rate")
	// ErrInvalidLimit: a Limit or an argument the client refuses before sending (a zero
	// capacity, a window that is not whole milliseconds, a policy limit in RL.ALL …).
	ErrInvalidLimit = errors.New("sluice: invalid limit")
	// ErrNeverAdmitted: Wait was asked for a request that can never be admitted.
	ErrNeverAdmitted = errors.New("sluice: the request can never be admitted")
	// ErrUnexpectedReply: a reply of a shape the command does not answer.
	ErrUnexpectedReply = errors.New("sluice: unexpected reply")
)

// ServerError is an error reply of the server.
type ServerError struct {
	// Kind is the sentinel it matches (ErrWrongType …, or ErrServer).
	Kind error
	// Message is the server's text, prefix included ("WRONGTYPE Operation against …").
	Message string
	err     error
}

func (e *ServerError) Error() string { return e.Message }

// Unwrap returns the sentinel and go-redis's error, for errors.Is and errors.As.
func (e *ServerError) Unwrap() []error { return []error{e.Kind, e.err} }

// errorKinds maps an error reply's prefix to its sentinel, in the order they are tried.
var errorKinds = [...]struct {
	prefix string
	kind   error
}{
	{"WRONGTYPE ", ErrWrongType},
	{"ERR no such policy", ErrNoSuchPolicy},
	{"CLUSTERDOWN ", ErrClusterDown},
	{"UNKNOWN ", ErrOutcomeUnknown},
	{"TRYAGAIN ", ErrOutcomeUnknown}, // servers before UNKNOWN sent it for an unknown outcome
	{"OOM ", ErrOOM},
	{"NOAUTH ", ErrNoAuth},
	{"WRONGPASS ", ErrWrongPass},
	{"NOPERM ", ErrNoPerm},
	{"READONLY ", ErrReadOnly},
	{"ERR unknown command", ErrUnknownCommand},
	{"ERR unknown subcommand", ErrUnknownCommand},
	{"ERR max number of clients reached", ErrMaxClients},
}

// classify turns a server's error reply into a *ServerError; other errors (the network, a
// context, redis.Nil) are returned as they are.
// It does not allocate when err is nil.
func classify(err error) error {
	if err == nil || err == redis.Nil {
		return err
	}
	return classifyReply(err)
}

func classifyReply(err error) error {
	var re redis.Error // escapes to the heap: kept out of classify's path for nil
	if !errors.As(err, &re) {
		return err
	}
	msg := re.Error()
	kind := ErrServer
	for _, k := range errorKinds {
		if strings.HasPrefix(msg, k.prefix) {
			kind = k.kind
			break
		}
	}
	return &ServerError{Kind: kind, Message: msg, err: err}
}
