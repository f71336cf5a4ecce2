package main

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/process"
)

// main turns argv into options, runs the server (process.Process) and
// exits with the code docs/configuration.md documents ("Start-up,
// shutdown and exit codes"). Besides serving, the binary has modes that
// exit at once: --version, --help, --healthcheck (healthcheck.go), and,
// anywhere among the options, --check-config and --print-config.
func main() {
	args := os.Args[1:]
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-v") {
		fmt.Println("sluice v=" + commands.Version)
		return
	}
	if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
		process.Usage(os.Stdout)
		return
	}
	if len(args) >= 1 && args[0] == "--healthcheck" {
		os.Exit(healthcheckMain(args[1:]))
	}
	// A value never starts with "--" (the next option does), so these
	// words are modes wherever they stand.
	check, args := cutMode(args, "--check-config")
	print, args := cutMode(args, "--print-config")
	opts, err := process.ParseArgs(args)
	if err == nil && check {
		err = opts.Check()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice:", err)
		os.Exit(process.ExitUsage)
	}
	switch {
	case print:
		if err := process.WriteConfig(os.Stdout, opts); err != nil {
			fmt.Fprintln(os.Stderr, "sluice:", err)
			os.Exit(process.ExitFailed)
		}
		return
	case check:
		fmt.Println("sluice: the configuration is valid")
		return
	}
	if slack, awake := opts.TimerSlack(), opts.MonitorAwake(); slack > 0 || awake {
		// Returns only when this image already runs with them, or could
		// not be given them; serving goes on either way.
		if err := restartForRuntime(slack, awake); err != nil {
			fmt.Fprintln(os.Stderr, "sluice: warning: --timer-slack-us and --runtime-monitor-awake not applied:", err)
		}
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

// cutMode removes every mode word from args and reports whether there was one.
func cutMode(args []string, mode string) (bool, []string) {
	if !slices.Contains(args, mode) {
		return false, args
	}
	return true, slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == mode })
}
