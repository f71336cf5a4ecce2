package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/process"
)

// main turns argv into options, runs the server (process.Process) and
// exits with the code docs/configuration.md documents ("Start-up,
// shutdown and exit codes").
func main() {
	if len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "-v") {
		fmt.Println("sluice v=" + commands.Version)
		return
	}
	if len(os.Args) == 2 && (os.Args[1] == "--help" || os.Args[1] == "-h") {
		process.Usage(os.Stdout)
		return
	}
	opts, err := process.ParseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice:", err)
		os.Exit(process.ExitUsage)
	}
	opts.Signals = true
	p, err := process.Open(opts)
	if err == nil {
		err = p.Serve()
	}
	if err != nil {
		var code process.ExitStatus
		if errors.As(err, &code) {
			os.Exit(int(code))
		}
		fmt.Fprintln(os.Stderr, "sluice:", err)
		os.Exit(process.ExitFailed)
	}
}
