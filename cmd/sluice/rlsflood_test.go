package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/proto"
)

// The unread-replies attack on the gRPC front end, measured on the real
// process: connections that send ShouldRateLimit calls as fast as the
// server reads them and never read a byte back. Run by hand (it sends for
// up to 20 s a connection and reports resident sizes):
//
//	go test ./cmd/sluice/ -run TestRLSFloodResidentSize -rls-flood -v
//
// -rls-flood-args adds server options (e.g. the limits raised to grpc-go's
// defaults, to compare).
var (
	rlsFlood     = flag.Bool("rls-flood", false, "run TestRLSFloodResidentSize")
	rlsFloodArgs = flag.String("rls-flood-args", "", "server options added to TestRLSFloodResidentSize's")
	rlsFloodConn = flag.Int("rls-flood-conns", 4, "TestRLSFloodResidentSize's connections")
)

// floodConn sends up to calls ShouldRateLimit calls on a raw HTTP/2
// connection to addr, never reading, until a write blocks for 5 s or
// fails. It returns the calls sent and the open connection.
func floodConn(t *testing.T, addr string, calls int) (int, net.Conn) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := proto.Marshal(&rlsv3.RateLimitRequest{Domain: "api", Descriptors: []*ratelimitv3.RateLimitDescriptor{
		{Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "10.0.0.1"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(frame[1:], uint32(len(msg)))
	copy(frame[5:], msg)
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"},
		{":path", "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"}, {":authority", "sluice"},
		{"content-type", "application/grpc"}, {"te", "trailers"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	var out bytes.Buffer
	fr := http2.NewFramer(&out, nil)
	io.WriteString(&out, http2.ClientPreface)
	fr.WriteSettings()
	sent := 0
	for id := uint32(1); sent < calls; id += 2 {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block.Bytes(), EndHeaders: true})
		fr.WriteData(id, true, frame)
		sent++
		if out.Len() >= 64<<10 || sent == calls {
			nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := nc.Write(out.Bytes()); err != nil {
				return sent, nc // the server stopped reading
			}
			out.Reset()
		}
	}
	return sent, nc
}

func TestRLSFloodResidentSize(t *testing.T) {
	if !*rlsFlood {
		t.Skip("run with -rls-flood")
	}
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	writeRules(t, rules, 1000000)
	args := []string{"--dir", dir, "--save", "0", "--policies", rules, "--grpc-bind", "127.0.0.1:0"}
	args = append(args, strings.Fields(*rlsFloodArgs)...)
	p := start(t, args...)
	m := grpcReadyRE.FindStringSubmatch(p.waitLog(t, grpcReadyRE.String()))
	pid := p.cmd.Process.Pid
	before := residentKB(pid, "VmRSS")
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int
		conns []net.Conn
	)
	for range *rlsFloodConn {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, nc := floodConn(t, m[1], 2_000_000)
			mu.Lock()
			total += n
			conns = append(conns, nc)
			mu.Unlock()
		}()
	}
	wg.Wait()
	time.Sleep(2 * time.Second)
	during, peak := residentKB(pid, "VmRSS"), residentKB(pid, "VmHWM")
	for _, nc := range conns {
		nc.Close()
	}
	time.Sleep(5 * time.Second)
	after := residentKB(pid, "VmRSS")
	t.Logf("%d connections, %d calls written unread: resident %d MB before, %d MB with them open (peak %d MB), %d MB 5 s after they closed",
		len(conns), total, before>>10, during>>10, peak>>10, after>>10)
	p.stop()
}
