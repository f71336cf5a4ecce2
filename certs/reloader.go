package certs

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Reloader holds the certificate, the private key and the CA bundle that
// Options name, and hands out tls.Configs that read them at each handshake
// (GetConfigForClient, GetClientCertificate, VerifyConnection). A reload
// swaps them for the handshakes that follow; a connection already open keeps
// the keys it negotiated and is never closed.
//
// A reload reads the files through any symbolic links, so a Kubernetes
// secret update (which swaps a ..data link) is seen like any other change.
// A set of files that does not load (a key that no longer matches its
// certificate because only one file was replaced yet, an unreadable file)
// is refused whole: the material in force stays, and the error names the
// file.
//
// Concurrency: all methods are safe for concurrent use; loads run one at a
// time. The reloader reads no clock; its poller uses a ticker.
type Reloader struct {
	opts Options
	p    params
	cur  atomic.Pointer[material]

	mu      sync.Mutex // one load at a time; guards seen, tried and inForce
	seen    [32]byte   // fingerprint of what the last attempt read
	tried   bool
	inForce [32]byte // fingerprint of the material in force

	run  sync.Mutex // guards stop and done
	stop chan struct{}
	done chan struct{}
}

// material is one loaded set of files. It is never changed once stored.
type material struct {
	cert       *tls.Certificate // presented as a server
	clientCert *tls.Certificate // presented as a client
	pool       *x509.CertPool
	server     *tls.Config // ServerConfig's per-handshake configuration
	peer       *tls.Config // PeerServerConfig's
}

// New validates opts and loads the files. The certificate, the key and the
// CA bundle are required (Redis does not fall back to the system's roots
// either).
func New(opts Options) (*Reloader, error) {
	for _, f := range []struct{ option, path string }{
		{"tls-cert-file", opts.CertFile}, {"tls-key-file", opts.KeyFile}, {"tls-ca-cert-file", opts.CAFile},
	} {
		if f.path == "" {
			return nil, fmt.Errorf("%s %w for TLS", f.option, ErrMissingFile)
		}
	}
	if (opts.ClientCertFile == "") != (opts.ClientKeyFile == "") {
		return nil, fmt.Errorf("tls-client-cert-file and tls-client-key-file go together: set both or neither")
	}
	p, err := opts.params()
	if err != nil {
		return nil, err
	}
	r := &Reloader{opts: opts, p: p}
	if _, err := r.Reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// files are the paths a load reads, with their options' names.
func (r *Reloader) files() [][2]string {
	f := [][2]string{{"tls-cert-file", r.opts.CertFile}, {"tls-key-file", r.opts.KeyFile}, {"tls-ca-cert-file", r.opts.CAFile}}
	if r.opts.ClientCertFile != "" {
		f = append(f, [2]string{"tls-client-cert-file", r.opts.ClientCertFile}, [2]string{"tls-client-key-file", r.opts.ClientKeyFile})
	}
	return f
}

// read returns the files' contents, in files' order, and their fingerprint
// (of the contents, or of the first read error).
func (r *Reloader) read() ([][]byte, [32]byte, error) {
	h := sha256.New()
	var out [][]byte
	for _, f := range r.files() {
		b, err := os.ReadFile(f[1])
		if err != nil {
			err = fileError(f[0], f[1], err)
			return nil, sha256.Sum256([]byte("error: " + err.Error())), err
		}
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
		out = append(out, b)
	}
	var fp [32]byte
	h.Sum(fp[:0])
	return out, fp, nil
}

// Reload reads the files now and puts them in force if they load, whether
// or not they changed (SIGHUP). It reports whether what they hold differs
// from the material in force; on error the material in force stays.
func (r *Reloader) Reload() (changed bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	contents, fp, err := r.read()
	return r.loadLocked(contents, fp, err)
}

// Poll reads the files and loads them if what they hold differs from what
// the last attempt read. It reports whether it tried a load, and the load's
// error: a set that failed is not tried again until a file changes (or
// Reload is called), so a persistent fault is reported once.
func (r *Reloader) Poll() (tried bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	contents, fp, err := r.read()
	if r.tried && fp == r.seen {
		return false, nil
	}
	_, err = r.loadLocked(contents, fp, err)
	return true, err
}

// loadLocked parses what read returned and stores it. It requires r.mu.
func (r *Reloader) loadLocked(contents [][]byte, fp [32]byte, readErr error) (bool, error) {
	first := !r.tried
	r.seen, r.tried = fp, true
	if readErr != nil {
		return false, readErr
	}
	m, err := r.parse(contents)
	if err != nil {
		return false, err
	}
	changed := first || fp != r.inForce
	r.cur.Store(m)
	r.inForce = fp
	return changed, nil
}

func (r *Reloader) parse(contents [][]byte) (*material, error) {
	f := r.files()
	cert, err := parsePair(f[0], f[1], contents[0], contents[1])
	if err != nil {
		return nil, err
	}
	pool, err := parseCA(f[2], contents[2])
	if err != nil {
		return nil, err
	}
	m := &material{cert: cert, clientCert: cert, pool: pool}
	if len(contents) == 5 {
		if m.clientCert, err = parsePair(f[3], f[4], contents[3], contents[4]); err != nil {
			return nil, err
		}
	}
	m.server = r.serverConfig(m, r.p.clientAuth)
	m.peer = r.serverConfig(m, tls.RequireAndVerifyClientCert)
	// A peer's connection is long-lived: a full handshake each time costs
	// nothing that matters, and no resumed session outlives a CA rotation.
	m.peer.SessionTicketsDisabled = true
	return m, nil
}

func (r *Reloader) serverConfig(m *material, auth tls.ClientAuthType) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{*m.cert},
		ClientCAs:    m.pool,
		ClientAuth:   auth,
		MinVersion:   r.p.minVersion,
		MaxVersion:   r.p.maxVersion,
		CipherSuites: r.p.suites,
	}
}

// Leaf returns the certificate in force (for logging its subject and
// expiry).
func (r *Reloader) Leaf() *x509.Certificate { return r.cur.Load().cert.Leaf }

// Start polls the files every interval in a goroutine until Stop, and calls
// report (if not nil) after each load it tried. It refuses to start twice.
func (r *Reloader) Start(interval time.Duration, report func(err error)) error {
	r.run.Lock()
	defer r.run.Unlock()
	if r.stop != nil {
		return ErrWatching
	}
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go func(stop, done chan struct{}) {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if tried, err := r.Poll(); tried && report != nil {
					report(err)
				}
			}
		}
	}(r.stop, r.done)
	return nil
}

// Stop ends the poller that Start began and waits for it.
func (r *Reloader) Stop() {
	r.run.Lock()
	defer r.run.Unlock()
	if r.stop == nil {
		return
	}
	close(r.stop)
	<-r.done
	r.stop, r.done = nil, nil
}
