package commands

import (
	"bytes"

	"github.com/sluice-rl/sluice/internal/parse"
)

// Parsers for the numeric arguments of the RL.* commands: integers, costs,
// durations and rates, as DESIGN.md ("Commands (the contract)" → "Arguments")
// defines them.
//
// Each parser reads the argument bytes as they came off the wire, does not
// allocate when the argument is valid, and on failure returns an replyError whose
// text is the reply. They are pure functions, safe for concurrent use.

// printable returns a client's argument for quoting in an error text: cut to
// 128 bytes (as Redis quotes unknown commands, with %.128s), with CR and LF
// replaced by spaces so that the reply stays a single RESP line.
func printable(arg []byte) string {
	if len(arg) > 128 {
		arg = arg[:128]
	}
	out := bytes.Clone(arg) // arg may be the connection's read buffer
	for i, c := range out {
		if c == '\r' || c == '\n' {
			out[i] = ' '
		}
	}
	return string(out)
}

// parseCost accepts the n argument of a decision: any integer parse.Int
// accepts, zero (a peek) and negative (a refund) included.
func parseCost(b []byte) (int64, error) {
	n, ok := parse.Int(b)
	if !ok {
		return 0, errNotInteger
	}
	return n, nil
}

// parsePositive accepts a capacity or a limit (named what in the error): an
// integer parse.Int accepts that is at least 1.
func parsePositive(b []byte, what string) (int64, error) {
	n, ok := parse.Int(b)
	if !ok {
		return 0, errNotInteger
	}
	if n <= 0 {
		return 0, errNotPositive(what)
	}
	return n, nil
}

// parseDuration accepts a window or a lease (named what in the errors) and
// returns it in nanoseconds: parse.Duration's grammar, a positive integer
// immediately followed by one of the units ms, s, m, h, d, like 1500ms, 60s,
// 1m, 1h, 1d.
func parseDuration(b []byte, what string) (int64, error) {
	ns, fault := parse.Duration(b)
	switch fault {
	case parse.OK:
		return ns, nil
	case parse.Malformed:
		return 0, errInvalidDuration(what, b)
	}
	return 0, durationErr(fault, what)
}

// durationErr words a well-formed duration's fault for the argument named
// what; each caller words a malformed one itself.
func durationErr(f parse.Fault, what string) error {
	switch f {
	case parse.NoUnit:
		return errNoUnit(what)
	case parse.NotPositive:
		return errNotPositive(what)
	case parse.OutOfRange:
		return errDurationRange(what)
	}
	return nil
}

// parseRate accepts a rate and returns its emission interval, in
// parse.Rate's grammar (DESIGN.md's): N/unit (10/s), N/duration (100/90s) or
// N alone per second (10, 0.5), N a positive decimal with up to 9 digits
// after the point.
func parseRate(b []byte) (int64, error) {
	ns, fault := parse.Rate(b)
	switch fault {
	case parse.OK:
		return ns, nil
	case parse.Malformed, parse.MalformedPeriod:
		return 0, errInvalidRate(b)
	case parse.ZeroRate:
		return 0, errRateNotPositive
	case parse.TooHigh:
		return 0, errRateTooHigh
	case parse.TooLow:
		return 0, errRateTooLow
	}
	return 0, durationErr(fault, "rate period")
}
