package client

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestNamedRepliesDecodeInBothProtocols: a connection that asks for named
// replies (OnConnect: NamedReplies) gets them from the server, as a flat
// field/value array in RESP2 and a map in RESP3, and the typed calls read
// them as they read positional ones.
func TestNamedRepliesDecodeInBothProtocols(t *testing.T) {
	namedProtocols(t, debugServer(t), func(t *testing.T, c *Client, rdb *redis.Client) {
		proto := rdb.Options().Protocol
		ctx := context.Background()
		key := "named" + string(rune('0'+proto))
		r, err := c.Token(ctx, key, PerSecond(10), 20, 1)
		if err != nil || !r.Allowed || r.Limit != 20 || r.Remaining != 19 {
			t.Fatalf("RESP%d: Token with named replies = %+v, %v", proto, r, err)
		}
		raw, err := rdb.Do(ctx, "RL.TOKEN", key, "10/s", 20, 0).Result()
		if err != nil {
			t.Fatal(err)
		}
		switch v := raw.(type) {
		case []any: // RESP2: field, value, …
			if len(v) != 10 || v[0] != "allowed" || v[4] != "remaining" || v[5] != int64(19) {
				t.Fatalf("RESP%d: raw reply %#v; want a flat named array", proto, raw)
			}
		case map[any]any: // RESP3
			if proto != 3 || v["remaining"] != int64(19) || v["allowed"] != true {
				t.Fatalf("RESP%d: raw reply %#v; want a map", proto, raw)
			}
		default:
			t.Fatalf("RESP%d: raw reply %#v (%T); want a named reply", proto, raw, raw)
		}
	})
}
