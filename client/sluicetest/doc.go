// Package sluicetest runs a real sluice server on 127.0.0.1 for tests: built once per source tree
// (or taken from $SLUICE_BIN), stopped when the test ends, and able to be killed, paused with
// SIGSTOP and restarted on the same port.
package sluicetest
