package cluster

import (
	"bufio"
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/resp"
)

// TestCallAsyncHandsEachReplyToItsCaller: commands sent without waiting
// (pipeConn.callAsync, a follower's event loop forwarding) get their
// replies in the order they were sent; those still waiting when the
// connection breaks learn that their outcome is unknown, and nothing more
// is sent on it.
func TestCallAsyncHandsEachReplyToItsCaller(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The peer answers the first three commands with their argument, then
	// reads a fourth and hangs up without answering it.
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		br := bufio.NewReader(nc)
		var v resp.Value
		for i := range 4 {
			if err := resp.Read(br, &v); err != nil || len(v.Elems) != 2 {
				return
			}
			if i < 3 {
				arg := v.Elems[1].Text
				nc.Write([]byte("$" + strconv.Itoa(len(arg)) + "\r\n" + string(arg) + "\r\n"))
			}
		}
	}()
	fwd := newForwarder("", nil)
	defer fwd.close()
	pc, err := fwd.conn(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		reply string
		err   error
	}
	got := make(chan answer, 4)
	for i := range 4 {
		if !pc.callAsync([][]byte{[]byte("RAFT.FORWARD"), []byte("r" + strconv.Itoa(i))}, func(reply []byte, err error) {
			got <- answer{string(reply), err}
		}) {
			t.Fatalf("callAsync %d on a live, idle connection = false; want true", i)
		}
	}
	for i := range 4 {
		select {
		case a := <-got:
			switch {
			case i < 3 && (a.err != nil || a.reply != "r"+strconv.Itoa(i)):
				t.Fatalf("reply %d = %q, %v; want r%d", i, a.reply, a.err, i)
			case i == 3 && (a.err == nil || !strings.HasPrefix(a.err.Error(), "UNKNOWN")):
				t.Fatalf("reply %d, the connection broken = %q, %v; want UNKNOWN", i, a.reply, a.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("reply %d never came", i)
		}
	}
	if pc.callAsync([][]byte{[]byte("PING")}, func([]byte, error) { t.Error("notified of a command never sent") }) {
		t.Fatal("callAsync on a broken connection = true; want false")
	}
}

// TestCallAsyncDeclinesAFullSocket: a leader that stops reading (paused,
// partitioned) must not block the event loop that forwards to it. Once the
// socket has no room for a command, callAsync declines at once, sending
// nothing (the loop then forwards from a goroutine), instead of waiting up
// to the write timeout with every other client of its loop.
func TestCallAsyncDeclinesAFullSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 1)
	go func() { // accepts, never reads
		if nc, err := ln.Accept(); err == nil {
			held <- nc
		}
	}()
	defer func() {
		select {
		case nc := <-held:
			nc.Close()
		default:
		}
	}()
	fwd := newForwarder("", nil)
	defer fwd.close()
	pc, err := fwd.conn(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	arg := bytes.Repeat([]byte("x"), 64<<10)
	for i := 0; ; i++ {
		if i == 4096 { // 256 MiB: far past any socket buffer
			t.Fatal("callAsync never declined a peer that does not read")
		}
		start := time.Now()
		sent := pc.callAsync([][]byte{[]byte("RAFT.FORWARD"), arg}, func([]byte, error) {})
		if took := time.Since(start); took >= writeTimeout/2 {
			t.Fatalf("callAsync %d blocked %v on a full socket", i, took)
		}
		if !sent {
			break
		}
	}
	if pc.isDead() {
		t.Fatal("declining closed the connection")
	}
}
