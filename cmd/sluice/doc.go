// Command sluice is the rate-limit server: it reads flags and an optional
// redis.conf-style file, wires the store and the network layer together and
// shuts down cleanly on SIGINT or SIGTERM.
//
//	sluice [/path/to/sluice.conf] [--port 6380] [--bind 127.0.0.1] [--requirepass secret] ...
package main
