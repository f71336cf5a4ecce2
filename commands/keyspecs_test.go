package commands

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/internal/testutil"
)

// getKeysCases are sample calls and the keys COMMAND GETKEYS returns for
// them: every RL.* command, the scripts and the key-space and string
// commands.
var getKeysCases = []struct{ call, keys string }{
	{"RL.TOKEN k1 10/s 20", "k1"}, {"RL.TOKEN k1 10/s 20 3", "k1"}, {"RL.LEAKY k1 10/s 20", "k1"},
	{"RL.TAKE k1 TOKEN 10/s 20 5 MIN 1", "k1"},
	{"RL.FIXED k1 10 1s", "k1"}, {"RL.SLIDING k1 10 1s 2", "k1"}, {"RL.LOG k1 10 1s", "k1"},
	{"RL.ALL 1 TOKEN a 10/s 20", "a"}, {"RL.ALL 2 TOKEN a 10/s 20 FIXED b 10 1s LOG c 5 1m", "a b c"},
	{"RL.ALL 1 LEAKY {u}:a 1/s 5 SLIDING {u}:b 10 1s", "{u}:a {u}:b"},
	{"RL.CHECK p s", "s"}, {"RL.CHECK p s 3", "s"}, {"RL.CHECK p1 s1 p2 s2", "s1 s2"}, {"RL.CHECK p1 s1 p2 s2 4", "s1 s2"},
	{"RL.INFO k1", "k1"}, {"RL.INFO POLICY p s", "s"},
	{"RL.RESET k1", "k1"}, {"RL.RESET k1 k2 k3", "k1 k2 k3"}, {"RL.RESET POLICY p s1 s2", "s1 s2"},
	{"RL.OVERRIDE SET p s TOKEN 10/s 20", "s"}, {"RL.OVERRIDE GET p s", "s"}, {"RL.OVERRIDE DEL p s", "s"},
	{"RL.OVERRIDE LIST p", ""}, {"RL.ACQUIRE k1 10 id1 5000", "k1"}, {"RL.RELEASE k1 id1", "k1"},
	{"CL.THROTTLE k1 15 30 60", "k1"}, {"CL.THROTTLE k1 15 30 60 2", "k1"},
	{"EVAL s 0", ""}, {"EVAL s 2 a b c", "a b"}, {"EVALSHA 0123 1 a b", "a"}, {"EVAL_RO s 1 a", "a"},
	{"EVALSHA_RO 0123 2 a b", "a b"},
	{"DEL a", "a"}, {"DEL a b c", "a b c"}, {"UNLINK a b", "a b"}, {"EXISTS a b", "a b"}, {"TYPE a", "a"},
	{"TTL a", "a"}, {"PTTL a", "a"}, {"GET a", "a"}, {"STRLEN a", "a"}, {"SET a v", "a"}, {"SET a v GET", "a"}, {"INCR a", "a"},
	{"INCRBY a 2", "a"}, {"DECR a", "a"}, {"DECRBY a 2", "a"}, {"EXPIRE a 10", "a"}, {"PEXPIRE a 10 NX", "a"},
	{"SETEX a 10 v", "a"}, {"PSETEX a 10 v", "a"}, {"SETNX a v", "a"}, {"GETDEL a", "a"}, {"MGET a b c", "a b c"},
	{"WATCH a b", "a b"}, {"MEMORY USAGE a", "a"}, {"OBJECT ENCODING a", "a"},
}

// TestGetKeysFindsEveryKey asks COMMAND GETKEYS for every sample call and
// requires exactly its keys; CommandKeys, which the cluster router calls,
// must find the same.
func TestGetKeysFindsEveryKey(t *testing.T) {
	s := startServer(t, testConfig{})
	c := testutil.Dial(t, s.addr)
	for _, tc := range getKeysCases {
		want := "[" + strings.Join(prefixed("$", strings.Fields(tc.keys)), " ") + "]"
		if got := c.Do("COMMAND GETKEYS " + tc.call + "\r\n"); got != want {
			t.Errorf("COMMAND GETKEYS %s = %s; want %s", tc.call, got, want)
		}
		keys, known := CommandKeys(bytes.Fields([]byte(tc.call)))
		if got := string(bytes.Join(keys, []byte(" "))); !known || got != tc.keys {
			t.Errorf("CommandKeys(%s) = %q, %v; want %q", tc.call, got, known, tc.keys)
		}
	}
}

func prefixed(p string, l []string) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = p + s
	}
	return out
}

// TestEveryKeyedCommandHasKeySpecs requires a key spec of every command
// whose arguments document a key, every sample call of a command with key
// specs, and COMMAND INFO's first/last/step to be what the specs give.
func TestEveryKeyedCommandHasKeySpecs(t *testing.T) {
	sampled := map[string]bool{}
	for _, tc := range getKeysCases {
		sampled[strings.ToLower(strings.Fields(tc.call)[0])] = true
	}
	for _, cmd := range sortedCommands() {
		documented := false
		for _, a := range cmd.arguments {
			documented = documented || a.typ == "key"
		}
		hasSpecs := len(cmd.keySpecs) > 0
		if documented && !hasSpecs {
			t.Errorf("%s documents a key argument but has no key specs", cmd.name)
		}
		if hasSpecs && !sampled[cmd.name] {
			t.Errorf("%s has key specs but no sample call in getKeysCases", cmd.name)
		}
	}
	for _, tc := range []struct {
		name               string
		first, last, step  int
		movable, mandatory bool
	}{
		{"rl.check", 2, -1, 2, false, true}, {"rl.all", 3, -3, 4, false, true}, {"rl.token", 1, 1, 1, false, true},
		{"rl.info", 1, 1, 1, true, true}, {"rl.reset", 1, -1, 1, true, true}, {"rl.override", 3, 3, 1, true, false},
		{"eval", 0, 0, 0, true, false}, {"evalsha_ro", 0, 0, 0, true, false}, {"del", 1, -1, 1, false, true},
	} {
		cmd := commandTable[tc.name]
		got := fmt.Sprint(cmd.firstKey, cmd.lastKey, cmd.keyStep, cmd.flags&flagMovableKeys != 0,
			cmd.flags&flagNoMandatoryKeys == 0)
		if want := fmt.Sprint(tc.first, tc.last, tc.step, tc.movable, tc.mandatory); got != want {
			t.Errorf("%s: first last step movable mandatory = %s; want %s", tc.name, got, want)
		}
	}
}

// TestGetKeysErrors: COMMAND GETKEYS's errors and its flags, in Redis's
// words.
func TestGetKeysErrors(t *testing.T) {
	s := startServer(t, testConfig{})
	c := testutil.Dial(t, s.addr)
	for _, tc := range []struct{ call, want string }{
		{"COMMAND GETKEYS", "-ERR wrong number of arguments for 'command|getkeys' command"},
		{"COMMAND GETKEYS NOSUCH a", "-ERR Invalid command specified"},
		{"COMMAND GETKEYS PING", "-ERR wrong number of arguments for 'command|getkeys' command"},
		{"COMMAND GETKEYS PING x", "-ERR The command has no key arguments"},
		{"COMMAND GETKEYS RL.MATCH dom DESCRIPTOR k v", "-ERR The command has no key arguments"},
		{"COMMAND GETKEYS GET a b c", "-ERR Invalid number of arguments specified for command"},
		{"COMMAND GETKEYS GET a b", "-ERR Invalid number of arguments specified for command"},
		{"COMMAND GETKEYS RL.CHECK p", "-ERR Invalid number of arguments specified for command"},
		{"COMMAND GETKEYS EVAL s 3 a", "[]"},
		{"COMMAND GETKEYS EVAL s x a", "[]"},
		{"COMMAND GETKEYSANDFLAGS RL.CHECK p1 s1 p2 s2", "[[$s1 [+RW +access +update]] [$s2 [+RW +access +update]]]"},
		{"COMMAND GETKEYSANDFLAGS SET a v", "[[$a [+OW +update]]]"},
		{"COMMAND GETKEYSANDFLAGS SET a v NX GET", "[[$a [+RW +access +update]]]"},
		{"COMMAND GETKEYSANDFLAGS RL.RESET POLICY p s", "[[$s [+RM +delete]]]"},
	} {
		if got := c.Do(tc.call + "\r\n"); got != tc.want {
			t.Errorf("%s = %s; want %s", tc.call, got, tc.want)
		}
	}
}

// TestKeySpecsAgreeWithRedis compares COMMAND INFO's key specs, first key,
// last key and step, and COMMAND GETKEYSANDFLAGS, with Redis 7's for the
// commands both servers have.
func TestKeySpecsAgreeWithRedis(t *testing.T) {
	redisDB := startRedis(t)
	s := startServer(t, testConfig{})
	sluiceDB := s.client(t, proto(2))
	ctx := context.Background()
	for _, name := range []string{"del", "unlink", "exists", "type", "ttl", "pttl", "get", "set", "incr", "incrby",
		"decr", "decrby", "expire", "pexpire", "setex", "psetex", "setnx", "getdel", "mget", "strlen", "eval", "evalsha",
		"eval_ro", "evalsha_ro", "watch"} {
		want, err := redisDB.Do(ctx, "COMMAND", "INFO", name).Slice()
		if err != nil {
			t.Fatal(err)
		}
		got, err := sluiceDB.Do(ctx, "COMMAND", "INFO", name).Slice()
		if err != nil {
			t.Fatal(err)
		}
		w, g := want[0].([]any), got[0].([]any)
		if !reflect.DeepEqual(g[3:6], w[3:6]) {
			t.Errorf("COMMAND INFO %s first, last, step = %v; Redis %v", name, g[3:6], w[3:6])
		}
		if !reflect.DeepEqual(g[8], w[8]) {
			t.Errorf("COMMAND INFO %s key specs = %v\nRedis %v", name, g[8], w[8])
		}
		wm, gm := hasFlag(w[2], "movablekeys"), hasFlag(g[2], "movablekeys")
		if wm != gm {
			t.Errorf("COMMAND INFO %s movablekeys = %v; Redis %v", name, gm, wm)
		}
	}
	for _, call := range [][]any{{"DEL", "a", "b"}, {"EXISTS", "a"}, {"TTL", "a"}, {"GET", "a"}, {"SET", "a", "v", "GET"}, {"SET", "a", "v", "EX", "10"},
		{"GETDEL", "a"}, {"SETNX", "a", "v"}, {"MGET", "a", "b", "c"}, {"EVAL", "s", "2", "a", "b", "c"},
		{"EVALSHA_RO", "s", "1", "a"}, {"EVAL", "s", "0"}, {"WATCH", "a", "b"}} {
		args := append([]any{"COMMAND", "GETKEYSANDFLAGS"}, call...)
		want, werr := redisDB.Do(ctx, args...).Result()
		got, gerr := sluiceDB.Do(ctx, args...).Result()
		if !reflect.DeepEqual(got, want) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("COMMAND GETKEYSANDFLAGS %v = %v, %v; Redis %v, %v", call, got, gerr, want, werr)
		}
	}
	for _, call := range [][]any{{"NOSUCH", "a"}, {"PING"}, {"PING", "x"}, {"GET"}, {"GET", "a", "b"},
		{"EVAL", "s", "5", "a"}, {"EVAL", "s", "x", "a"}} {
		args := append([]any{"COMMAND", "GETKEYS"}, call...)
		want, werr := redisDB.Do(ctx, args...).Result()
		got, gerr := sluiceDB.Do(ctx, args...).Result()
		if !reflect.DeepEqual(got, want) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("COMMAND GETKEYS %v = %v, %v; Redis %v, %v", call, got, gerr, want, werr)
		}
	}
}

func hasFlag(flags any, name string) bool {
	switch l := flags.(type) {
	case []any:
		for _, f := range l {
			if f == name {
				return true
			}
		}
	case map[any]bool:
		return l[name]
	}
	return false
}
