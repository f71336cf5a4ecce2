package compat

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// The plain commands' arguments and replies, beside the differential test
// against Redis that commands' TestStringCommandsAndScriptsAgreeWithRedis
// runs through the server.

const p0 = int64(1_800_000_000_000) * 1_000_000

func plain(cmd Cmd, k *Key, now int64, argv ...string) Reply {
	c := Call{Now: now, Keys: []Key{*k}}
	for _, a := range argv {
		c.Argv = append(c.Argv, []byte(a))
	}
	Exec(Op{Cmd: cmd}, &c)
	*k = c.Keys[0]
	return c.Reply
}

func TestSetOptionsAsRedis(t *testing.T) {
	var k Key
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"5", "NX", "PX", "1000"}, "OK"},
		{[]string{"6", "NX"}, "(nil)"},
		{[]string{"7", "XX", "GET", "KEEPTTL"}, `"5"`},
		{[]string{"8", "EX", "10", "PX", "5"}, "(error) ERR syntax error"},
		{[]string{"8", "KEEPTTL", "EX", "5"}, "(error) ERR syntax error"},
		{[]string{"8", "NX", "XX"}, "(error) ERR syntax error"},
		{[]string{"8", "EX"}, "(error) ERR syntax error"},
		{[]string{"8", "EX", "0"}, "(error) ERR invalid expire time in 'set' command"},
		{[]string{"8", "EX", "1.5"}, "(error) ERR value is not an integer or out of range"},
		{[]string{"8", "EX", "9223372036854775807"}, "(error) ERR invalid expire time in 'set' command"},
		{[]string{strings.Repeat("x", 65)}, "(error) " + ErrValueTooLong.Error()},
	} {
		if got := plain(CmdSet, &k, p0, c.argv...); got.String() != c.want {
			t.Fatalf("SET k %v = %s; want %s", c.argv, got.String(), c.want)
		}
	}
	if k.PTTL(p0) != 1000 { // KEEPTTL kept the first SET's PX
		t.Fatalf("PTTL after SET … KEEPTTL = %d; want 1000", k.PTTL(p0))
	}
	// A lock's token, and anything up to 64 bytes, is kept.
	token := strings.Repeat("0123456789abcdef", 4)
	if got := plain(CmdSet, &k, p0, token, "NX"); got.String() != "(nil)" {
		t.Fatalf("SET NX of a held key = %s; want (nil)", got.String())
	}
	if got := plain(CmdSet, &k, p0, token, "GET"); got.String() != `"7"` {
		t.Fatalf("SET … GET = %s; want \"7\"", got.String())
	}
	if got := plain(CmdGet, &k, p0); got.String() != strconv.Quote(token) {
		t.Fatalf("GET of 64 bytes = %s; want %q", got.String(), token)
	}
	if got := plain(CmdSet, &k, p0, "1", "PXAT", "1"); got.String() != "OK" || k.Live(p0) {
		t.Fatalf("SET … PXAT in the past = %s, live %v; want OK and no key", got.String(), k.Live(p0))
	}
}

func TestExpireConditionsAsRedis(t *testing.T) {
	var k Key
	plain(CmdSet, &k, p0, "1")
	for _, c := range []struct {
		cmd  Cmd
		argv []string
		want string
		pttl int64
	}{
		{CmdPexpire, []string{"5000", "XX"}, "0", -1},
		{CmdPexpire, []string{"5000", "GT"}, "0", -1},
		{CmdPexpire, []string{"5000", "NX"}, "1", 5000},
		{CmdPexpire, []string{"9000", "LT"}, "0", 5000},
		{CmdExpire, []string{"9", "GT"}, "1", 9000},
		{CmdExpire, []string{"9", "NX", "GT"}, "(error) ERR NX and XX, GT or LT options at the same time are not compatible", 9000},
		{CmdExpire, []string{"9", "GT", "LT"}, "(error) ERR GT and LT options at the same time are not compatible", 9000},
		{CmdExpire, []string{"9", "ZZ"}, "(error) ERR Unsupported option ZZ", 9000},
		{CmdPexpire, []string{"-1"}, "1", -2},
		{CmdPexpire, []string{"100"}, "0", -2},
	} {
		if got := plain(c.cmd, &k, p0, c.argv...); got.String() != c.want || k.PTTL(p0) != c.pttl {
			t.Fatalf("%v %v = %s, PTTL %d; want %s, %d", c.cmd, c.argv, got.String(), k.PTTL(p0), c.want, c.pttl)
		}
	}
	foreign := Key{Value: ForeignValue(), Expire: p0 + 1e9}
	if got := plain(CmdPexpire, &foreign, p0, "10"); got.Type != Error || foreign.Written {
		t.Fatalf("PEXPIRE of a limiter's key = %s, written %v; want WRONGTYPE and nothing written", got.String(), foreign.Written)
	}
}

// FuzzPlainCommands: any arguments to any plain command on any kind of
// key give a reply (never a panic), and a key written is one a keyspace can
// store: a value that packs and unpacks to itself.
func FuzzPlainCommands(f *testing.F) {
	f.Add(uint8(CmdSet), uint8(1), []byte("5\x00EX\x0010\x00NX"))
	f.Add(uint8(CmdSet), uint8(0), []byte("hello\x00GET\x00PXAT\x001"))
	f.Add(uint8(CmdIncrBy), uint8(2), []byte("-9223372036854775808"))
	f.Add(uint8(CmdDecrBy), uint8(1), []byte("-9223372036854775808"))
	f.Add(uint8(CmdPexpire), uint8(1), []byte("100\x00GT"))
	f.Add(uint8(CmdExpire), uint8(3), []byte("9223372036854775807"))
	f.Add(uint8(CmdGet), uint8(1), []byte(""))
	f.Fuzz(func(t *testing.T, cmd, kind uint8, args []byte) {
		var argv [][]byte
		if len(args) > 0 {
			argv = bytes.Split(args, []byte{0})
		}
		keys := []Key{{}, {Value: IntValue(41), Expire: NoExpire}, {Value: NumberValue(0.5), Expire: p0 + 1e6},
			{Value: ForeignValue(), Expire: p0 + 1e9}}
		c := Call{Now: p0, Keys: []Key{keys[int(kind)%len(keys)]}, Argv: argv}
		Exec(Op{Cmd: Cmd(cmd % uint8(CmdPexpire+1))}, &c) // 0 and CmdScript without a script included
		if c.Reply.Type == Error && !strings.HasPrefix(c.Reply.Err, "ERR ") && !strings.HasPrefix(c.Reply.Err, "WRONGTYPE ") {
			t.Fatalf("error reply without a code: %q", c.Reply.Err)
		}
		if k := c.Keys[0]; k.Written {
			if v, ok := Unpack(k.Value.Pack()); !ok || v != k.Value {
				t.Fatalf("written value %+v does not pack", k.Value)
			}
		}
		r, err := DecodeReply(c.Reply.AppendBinary(nil))
		if err != nil || r.String() != c.Reply.String() {
			t.Fatalf("reply %s decodes as %s, %v", c.Reply.String(), r.String(), err)
		}
	})
}

// FuzzDecodeReply: a forwarded reply is a parser's input; no bytes make it
// panic, and what decodes encodes to bytes that decode to the same reply
// (varints may come in longer forms than the encoder writes).
func FuzzDecodeReply(f *testing.F) {
	var r Reply
	r.array()
	r.addInt(1)
	r.addToString(0.5)
	r.addValue(Value{})
	f.Add(r.AppendBinary(nil))
	e := ErrorReply(ErrSyntax)
	f.Add(e.AppendBinary(nil))
	f.Add([]byte{byte(Array), 200})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeReply(b)
		if err != nil {
			return
		}
		again := r.AppendBinary(nil)
		if r2, err := DecodeReply(again); err != nil || r2.String() != r.String() || r2.Type != r.Type {
			t.Fatalf("%x decodes to %s, which encodes as %x, which decodes to %s, %v", b, r.String(), again, r2.String(), err)
		}
	})
}
