package libraries_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/internal/testutil"
	"github.com/sluice-rl/sluice/server"
	"github.com/sluice-rl/sluice/store"
)

// The libraries' tests run against one sluice server in this process, on
// a listener on 127.0.0.1:0 and its clock running (the libraries read
// time as applications do), started by TestMain; and, where results are
// compared, against a redis-server 7 of their own (startRedis).

// sluiceAddr is the address of the sluice server the tests talk to.
var sluiceAddr string

func TestMain(m *testing.M) {
	quiet := slog.New(slog.DiscardHandler)
	cfg := commands.DefaultConfig()
	cfg.Debug, cfg.Logger = commands.DebugYes, quiet
	clock := commands.NewClock()
	h, err := commands.New(cfg, store.New(8), clock)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scfg := server.DefaultConfig()
	scfg.Clock, scfg.Logger, scfg.EventLoops = clock, quiet, 2
	srv, err := server.New(scfg, h)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	h.Attach(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sluiceAddr = ln.Addr().String()
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	code := m.Run()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	srv.Shutdown(ctx)
	cancel()
	<-done
	os.Exit(code)
}

// startRedis runs redis-server on 127.0.0.1 and a TCP port of its own (the libraries dial
// TCP; testutil.StartRedisTCP), without persistence, until the test ends, and returns its
// address; it skips the test when redis-server is not installed.
func startRedis(t *testing.T) (addr string) {
	t.Helper()
	return testutil.StartRedisTCP(t).Addr
}
