package client

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// namedReplyArgs is the command that asks a connection for named decision replies. It is the
// only place the command is spelled.
var namedReplyArgs = []any{"CLIENT", "NAMED-REPLY", "ON"}

// NamedReplies is a go-redis OnConnect hook that asks each new connection for named decision
// replies: maps in RESP3, flat [name, value, …] arrays in RESP2, with the policy fields (mode,
// quota, window_s, would_deny) that positional replies lack. The client decodes both forms, so
// turning it on changes what a Result holds, not how it is read. Use it as
// redis.Options{OnConnect: client.NamedReplies}; to chain another hook, call it from yours.
// A server that does not know the command fails every new connection with ErrUnknownCommand.
func NamedReplies(ctx context.Context, cn *redis.Conn) error {
	cmd := redis.NewCmd(ctx, namedReplyArgs...)
	_ = cn.Process(ctx, cmd)
	return classify(cmd.Err())
}
