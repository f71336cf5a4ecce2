package rls

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// What one client can make the server hold: the streams of a connection,
// the connections, a connection that never completes its handshake, and
// descriptors longer than a key. The streams are opened over raw HTTP/2, as
// a client that ignores the server's SETTINGS would.

// serveRaw serves a service without rules on a fresh 127.0.0.1 port with
// opts and returns its address.
func serveRaw(t *testing.T, opts ServerOptions) string {
	t.Helper()
	f := newFixture(t, DefaultConfig())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(f.svc, opts)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Stop(ctx)
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// h2Conn is a raw HTTP/2 client connection.
type h2Client struct {
	t  *testing.T
	nc net.Conn
	fr *http2.Framer
}

// dialH2 connects to addr and sends the preface and an empty SETTINGS.
func dialH2(t *testing.T, addr string) *h2Client {
	t.Helper()
	c, err := tryDialH2(t, addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tryDialH2 is dialH2 for a connection the server may close at once: a
// write to it can fail, which is then the error, not the test's end.
func tryDialH2(t *testing.T, addr string) (*h2Client, error) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	c := &h2Client{t: t, nc: nc, fr: http2.NewFramer(nc, nc)}
	if _, err := io.WriteString(nc, http2.ClientPreface); err != nil {
		return c, err
	}
	return c, c.fr.WriteSettings()
}

// serverSettings reads frames up to the server's first SETTINGS and
// returns it.
func (c *h2Client) serverSettings() *http2.SettingsFrame {
	c.t.Helper()
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.t.Fatalf("reading the server's SETTINGS: %v", err)
		}
		if s, ok := f.(*http2.SettingsFrame); ok && !s.IsAck() {
			return s
		}
	}
}

// openCall opens stream id as a ShouldRateLimit call and sends no message:
// the call waits for its request.
func (c *h2Client) openCall(id uint32) {
	c.t.Helper()
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"},
		{":path", "/" + ServiceName + "/ShouldRateLimit"}, {":authority", "sluice"},
		{"content-type", "application/grpc"}, {"te", "trailers"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block.Bytes(), EndHeaders: true}); err != nil {
		c.t.Fatal(err)
	}
}

// The server announces its cap on a connection's concurrent calls, and
// refuses the stream past it (REFUSED_STREAM: the client may retry it)
// while the others wait for their requests.
func TestServerRefusesStreamsPastMaxConcurrentStreams(t *testing.T) {
	for _, n := range []uint32{0, 3} { // 0: the default
		want := n
		if want == 0 {
			want = DefaultMaxConcurrentStreams
		}
		c := dialH2(t, serveRaw(t, ServerOptions{Limits: Limits{MaxConcurrentStreams: n}}))
		s := c.serverSettings()
		if v, ok := s.Value(http2.SettingMaxConcurrentStreams); !ok || v != want {
			t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS = %d (set: %v); want %d", v, ok, want)
		}
		last := 2*want + 1 // the stream past the cap: ids 1, 3 … 2*want-1 are within it
		for id := uint32(1); id <= last; id += 2 {
			c.openCall(id)
		}
		for {
			f, err := c.fr.ReadFrame()
			if err != nil {
				t.Fatalf("cap %d: no RST_STREAM for stream %d: %v", want, last, err)
			}
			if r, ok := f.(*http2.RSTStreamFrame); ok {
				if r.StreamID != last || r.ErrCode != http2.ErrCodeRefusedStream {
					t.Fatalf("cap %d: RST_STREAM %d %v; want stream %d REFUSED_STREAM", want, r.StreamID, r.ErrCode, last)
				}
				break
			}
		}
	}
}

// A connection past the cap is closed as soon as it is accepted; once a
// connection closes, a new one is served.
func TestServerClosesConnectionsPastMaxConnections(t *testing.T) {
	addr := serveRaw(t, ServerOptions{Limits: Limits{MaxConnections: 2}})
	a, b := dialH2(t, addr), dialH2(t, addr)
	a.serverSettings()
	b.serverSettings()
	// The server may close the third connection before the client's
	// preface is written, so a failed write is as good as a failed read.
	if c, err := tryDialH2(t, addr); err == nil {
		if _, err := c.fr.ReadFrame(); err == nil {
			t.Fatal("a third connection under a cap of 2 read a frame; want it closed")
		}
	}
	a.nc.Close()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if d, err := tryDialH2(t, addr); err == nil {
			if _, err := d.fr.ReadFrame(); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no connection served within 5 s of one of the 2 closing")
		}
	}
}

// A connection that sends nothing is closed after the handshake timeout.
func TestServerClosesASilentConnectionAfterTheHandshakeTimeout(t *testing.T) {
	addr := serveRaw(t, ServerOptions{Limits: Limits{ConnectionTimeout: 200 * time.Millisecond}})
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	rest, err := io.ReadAll(nc)
	if err != nil {
		t.Fatalf("a silent connection: %v after reading %q; want it closed by the server", err, rest)
	}
}

// A connection that answers nothing, not even the server's keepalive ping
// (a client that stopped reading), is closed after KeepaliveTime and
// KeepaliveTimeout.
func TestServerClosesAConnectionThatLeavesItsPingUnanswered(t *testing.T) {
	addr := serveRaw(t, ServerOptions{Limits: Limits{KeepaliveTime: 200 * time.Millisecond, KeepaliveTimeout: 200 * time.Millisecond}})
	c := dialH2(t, addr)
	c.serverSettings()
	pinged := false
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			if !pinged || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("%v (pinged: %v); want a PING, then the connection closed", err, pinged)
			}
			return
		}
		if p, ok := f.(*http2.PingFrame); ok && !p.IsAck() {
			pinged = true
		}
	}
}

// A descriptor whose domain, keys and values add up to more than the
// longest key (Config.MaxKey, the RESP port's proto-max-bulk-len) is
// refused with INVALID_ARGUMENT, and creates no key; one at the bound is
// decided.
func TestDescriptorLongerThanAKeyIsRefused(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxKey = 100
	f := newFixture(t, cfg, "rules/api.yaml")
	fits := strings.Repeat("v", 100-len("api")-len("remote_address"))
	if _, err := f.try(request("api", 1, desc("remote_address", fits))); err != nil {
		t.Fatalf("a descriptor of exactly 100 bytes: %v; want it decided", err)
	}
	_, err := f.try(request("api", 1, desc("remote_address", "a"), desc("remote_address", fits+"v")))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "longest key") {
		t.Fatalf("a descriptor of 101 bytes under a 100-byte key limit: %v; want INVALID_ARGUMENT naming the longest key", err)
	}
	if n, _ := f.st.DBSize(f.clock.Now()); n != 1 {
		t.Errorf("%d keys after the refused call; want the 1 of the call before", n)
	}
}

// With the default options a request larger than DefaultMaxMessageSize
// (a 3 MB descriptor value) is refused before it is read whole.
func TestRequestLargerThanTheMessageSizeIsRefused(t *testing.T) {
	f := newFixture(t, DefaultConfig(), "rules/api.yaml")
	_, err := f.try(request("api", 1, desc("remote_address", strings.Repeat("v", 3<<20))))
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a 3 MB request: %v; want RESOURCE_EXHAUSTED", err)
	}
	if n, _ := f.st.DBSize(f.clock.Now()); n != 0 {
		t.Errorf("%d keys after the refused call; want none", n)
	}
}
