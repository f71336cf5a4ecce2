package main

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The lean generator's reader takes whatever a server sends: frames of any
// kind, order and content end a call with an answer or an error, never a
// panic or a call that waits after the server has closed the connection.

// h2Answer is a grpc-go server's answer on stream 1 to a call: headers,
// one message, trailers with grpc-status, after its SETTINGS' ACK, a
// WINDOW_UPDATE and a PING.
func h2Answer(msg []byte, grpcStatus string) []byte {
	var out, blk bytes.Buffer
	fr := http2.NewFramer(&out, nil)
	enc := hpack.NewEncoder(&blk)
	fr.WriteSettingsAck()
	fr.WriteWindowUpdate(0, 100)
	fr.WritePing(false, [8]byte{1, 2, 3})
	enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	enc.WriteField(hpack.HeaderField{Name: "content-type", Value: "application/grpc"})
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: blk.Bytes(), EndHeaders: true})
	fr.WriteData(1, false, append([]byte{0, 0, 0, 0, byte(len(msg))}, msg...))
	blk.Reset()
	enc.WriteField(hpack.HeaderField{Name: "grpc-status", Value: grpcStatus})
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: blk.Bytes(), EndHeaders: true, EndStream: true})
	return out.Bytes()
}

// leanCallAgainst makes one call on a connection whose server sends
// SETTINGS, waits for the call's request, sends script and closes; it fails
// the test if the call does not end within 10 s.
func leanCallAgainst(t *testing.T, script []byte) ([]byte, error) {
	cli, srv := net.Pipe()
	asked := make(chan struct{})
	go func() { // the server's reader: the preface, then frames until the request's end
		defer io.Copy(io.Discard, srv)
		defer close(asked)
		if _, err := io.ReadFull(srv, make([]byte, len(http2.ClientPreface))); err != nil {
			return
		}
		fr := http2.NewFramer(nil, srv)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if d, ok := f.(*http2.DataFrame); ok && d.StreamEnded() {
				return
			}
		}
	}()
	go func() {
		http2.NewFramer(srv, nil).WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 100})
		<-asked
		srv.Write(script)
		srv.Close()
	}()
	c, err := newH2Conn(cli, "fuzz", rlsPath)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	type answer struct {
		msg []byte
		err error
	}
	done := make(chan answer, 1)
	go func() {
		s := newH2Stream()
		if err := c.call(s, []byte{0, 0, 0, 0, 2, 0x0a, 0}); err != nil {
			done <- answer{nil, err}
			return
		}
		msg, err := s.grpcAnswer()
		done <- answer{msg, err}
	}()
	select {
	case a := <-done:
		return a.msg, a.err
	case <-time.After(10 * time.Second):
		t.Fatalf("a call waits after the server closed the connection (script %q)", script)
		return nil, nil
	}
}

func TestLeanReaderTakesAWholeAnswer(t *testing.T) {
	msg, err := leanCallAgainst(t, h2Answer([]byte{0x10, 1}, "0"))
	if err != nil || !bytes.Equal(msg, []byte{0x10, 1}) {
		t.Fatalf("answer %x, %v", msg, err)
	}
	if _, err := leanCallAgainst(t, h2Answer([]byte{0x10, 1}, "14")); err == nil {
		t.Fatal("grpc-status 14 accepted")
	}
	whole := h2Answer(nil, "0")
	if _, err := leanCallAgainst(t, whole[:len(whole)-3]); err == nil {
		t.Fatal("an answer cut short accepted")
	}
}

func FuzzLeanReader(f *testing.F) {
	f.Add(h2Answer([]byte{0x10, 1}, "0"))
	f.Add(h2Answer(nil, "8"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, script []byte) {
		leanCallAgainst(t, script)
	})
}
