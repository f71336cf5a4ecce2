package client

import (
	"strconv"
	"time"
)

// Rate is a number of units per period, as the server's rate argument takes it. Build one with
// PerSecond, PerMinute, PerHour, PerDay or Per; the zero Rate is invalid, and a call given an
// invalid Rate returns ErrInvalidRate without contacting the server. A Rate is a small value:
// copy it freely; formatting it for a command does not allocate.
type Rate struct {
	n   int64
	per time.Duration
}

// Per returns the rate of n units every period d: Per(100, 90*time.Second) is "100/90s".
func Per(n int64, d time.Duration) Rate { return Rate{n: n, per: d} }

// PerSecond returns the rate of n units a second ("n/s").
func PerSecond(n int64) Rate { return Rate{n: n, per: time.Second} }

// PerMinute returns the rate of n units a minute ("n/m").
func PerMinute(n int64) Rate { return Rate{n: n, per: time.Minute} }

// PerHour returns the rate of n units an hour ("n/h").
func PerHour(n int64) Rate { return Rate{n: n, per: time.Hour} }

// PerDay returns the rate of n units a day of 24 hours ("n/d").
func PerDay(n int64) Rate { return Rate{n: n, per: 24 * time.Hour} }

// Count returns the units per period.
func (r Rate) Count() int64 { return r.n }

// Period returns the period.
func (r Rate) Period() time.Duration { return r.per }

// Valid reports whether the rate has a positive count and period that the server's syntax can
// carry exactly.
func (r Rate) Valid() bool {
	_, _, ok := r.normal()
	return ok
}

// Interval returns the time between two units (period / count, rounded up as the server rounds
// it, so a limit never admits faster than asked), or 0 for an invalid rate.
func (r Rate) Interval() time.Duration {
	if !r.Valid() {
		return 0
	}
	return (r.per + time.Duration(r.n) - 1) / time.Duration(r.n)
}

// String returns the rate in the server's syntax ("10/s", "100/90s", "3/1500ms"), or "invalid"
// for an invalid rate.
func (r Rate) String() string {
	b, ok := r.appendTo(nil)
	if !ok {
		return "invalid"
	}
	return string(b)
}

// units are the server's duration units, largest first.
var units = [...]struct {
	d      time.Duration
	suffix string
}{
	{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"},
}

// normal returns the rate as a count per a period that is a whole number of milliseconds, the
// finest unit of the server's syntax: a period of 1500µs becomes 2 units per 3ms, exactly.
// ok is false for a count or period that is not positive, or one that overflows when scaled.
func (r Rate) normal() (n int64, per time.Duration, ok bool) {
	if r.n <= 0 || r.per <= 0 {
		return 0, 0, false
	}
	if r.per%time.Millisecond == 0 {
		return r.n, r.per, true
	}
	k := int64(time.Millisecond) / gcd(int64(r.per), int64(time.Millisecond))
	if r.n > (1<<63-1)/k || int64(r.per) > (1<<63-1)/k {
		return 0, 0, false
	}
	return r.n * k, r.per * time.Duration(k), true
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// appendTo appends the rate in the server's syntax to b: "N/unit" when the period is one unit,
// else "N/<k><unit>" with the largest unit that divides the period.
func (r Rate) appendTo(b []byte) ([]byte, bool) {
	n, per, ok := r.normal()
	if !ok {
		return b, false
	}
	b = strconv.AppendInt(b, n, 10)
	b = append(b, '/')
	return appendDuration(b, per, true), true
}

// appendDuration appends d, a positive whole number of milliseconds, with the largest unit that
// divides it ("90s", "1500ms", "2h"); bare leaves out a count of 1 ("s" rather than "1s"), as a
// rate's unit is written.
func appendDuration(b []byte, d time.Duration, bare bool) []byte {
	for _, u := range units {
		if d%u.d == 0 {
			if k := int64(d / u.d); k != 1 || !bare {
				b = strconv.AppendInt(b, k, 10)
			}
			return append(b, u.suffix...)
		}
	}
	return append(strconv.AppendInt(b, int64(d/time.Millisecond), 10), "ms"...)
}
