// Package figure is one number the server reports, as one row: the field
// INFO prints, the INFO sections it prints in, and the Prometheus metric
// the metrics endpoint exports it as. A package that keeps figures lists
// them in one table of Rows and returns them with Read; INFO and the
// metrics endpoint print and export the list without knowing its fields.
package figure

import (
	"strconv"
	"time"
)

// Kind is a figure's Prometheus type.
type Kind uint8

const (
	// InfoOnly figures are printed by INFO and not exported.
	InfoOnly Kind = iota
	// Counter figures only grow (until CONFIG RESETSTAT or a restart).
	Counter
	// Gauge figures go up and down.
	Gauge
)

// Section is a set of INFO sections.
type Section uint8

// The INFO sections a table's figures print in.
const (
	Memory Section = 1 << iota
	Persistence
	Stats
	CPU
	Leases // a lease tier's (INFO leases)
)

// Desc is what a figure is. Name is unique in a table; Metric, if set, is
// unique among the server's metrics and follows Prometheus's conventions
// (counters end in _total, times in seconds, sizes in bytes).
type Desc struct {
	Name   string  // the INFO field
	In     Section // the INFO sections that print it
	Kind   Kind
	Metric string // the metric's name after "sluice_"; "" for none
	Help   string // the metric's help line
}

// Value is a figure's value at one moment: the text INFO prints and the
// number the metric exports.
type Value struct {
	Text string
	Num  float64
}

// Int is an integer figure.
func Int(v int64) Value { return Value{Text: strconv.FormatInt(v, 10), Num: float64(v)} }

// Micros is a duration INFO prints in whole microseconds and the metric
// exports in seconds.
func Micros(d time.Duration) Value {
	return Value{Text: strconv.FormatInt(d.Microseconds(), 10), Num: d.Seconds()}
}

// Ratio is a fraction INFO prints with two decimals, as Redis's ratios.
func Ratio(f float64) Value { return Value{Text: strconv.FormatFloat(f, 'f', 2, 64), Num: f} }

// Text is a figure that is not a number (its Kind is InfoOnly).
func Text(s string) Value { return Value{Text: s} }

// Figure is a figure's description and its value at one moment.
type Figure struct {
	Desc
	Value
}

// Row is one line of a table of figures: the description and how to read
// the value from a reading of type T.
type Row[T any] struct {
	Desc
	Read func(T) Value
}

// Read returns the figures of rows, in order, read from r.
func Read[T any](rows []Row[T], r T) []Figure {
	out := make([]Figure, len(rows))
	for i := range rows {
		out[i] = Figure{Desc: rows[i].Desc, Value: rows[i].Read(r)}
	}
	return out
}

// Find returns the number of the figure named name in fs as an integer, 0
// if there is none.
func Find(fs []Figure, name string) int64 {
	for i := range fs {
		if fs[i].Name == name {
			return int64(fs[i].Num)
		}
	}
	return 0
}
