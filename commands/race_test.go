//go:build race

package commands

const raceEnabled = true
