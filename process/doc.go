// Package process is the whole running sluice server: the options table
// that reads the config file and the flags and drives --help and CONFIG
// GET, SET and REWRITE (options.go), and Process, which wires the store or
// the replicated node, the commands, the listeners, the gRPC front end,
// the metrics endpoint, TLS and the rules files together
// (Open → Serve → Shutdown). cmd/sluice runs one per process; a test may
// open one inside its own binary:
//
//	opts := process.Defaults()
//	opts.Set("port", "auto")
//	opts.Set("dir", t.TempDir())
//	p, err := process.Open(opts) // serving; p.Addrs() has the ports chosen
//	go p.Serve()
//	defer p.Shutdown(ctx)
//
// A server opened without Options.Signals catches no signal. After a final
// save at Shutdown (--save > 0) the store stays held, as the binary keeps
// it until it exits: the connections still open are not closed, and a
// command sent on one waits.
package process
