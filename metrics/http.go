package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server serves /metrics, /healthz and /readyz over HTTP.
//
// It starts before the server's state is loaded, so that /healthz answers
// at once and /readyz says why the node is not ready; Attach adds the
// figures once the commands exist.
type Server struct {
	reg   *prometheus.Registry
	http  *http.Server
	ready atomic.Pointer[func() error]
}

// errStarting is /readyz's answer before SetReady.
var errStarting = errors.New("starting: loading the snapshot")

// NewServer returns a Server whose registry holds the Go runtime's and the
// process's collectors (process_resident_memory_bytes, CPU, descriptors).
func NewServer() *Server {
	s := &Server{reg: prometheus.NewRegistry()}
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	starting := func() error { return errStarting }
	s.ready.Store(&starting)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", s.readyz)
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	return s
}

// Attach registers the collector of src's figures.
func (s *Server) Attach(src Source) error { return s.reg.Register(NewCollector(src)) }

// SetReady sets the check /readyz runs: nil means ready, an error says
// why not.
func (s *Server) SetReady(check func() error) { s.ready.Store(&check) }

// Registry returns the Server's registry.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := (*s.ready.Load())(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("not ready: " + err.Error() + "\n"))
		return
	}
	_, _ = w.Write([]byte("ready\n"))
}

// Serve serves ln until Shutdown; it returns nil after Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops serving, letting scrapes in hand finish until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }
