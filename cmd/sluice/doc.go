// Command sluice is the rate-limit server: it reads flags and an optional
// redis.conf-style file into process.Options, runs the server
// (process.Open, then Serve until SIGINT, SIGTERM or SHUTDOWN) and exits
// with the code docs/configuration.md documents.
//
//	sluice [/path/to/sluice.conf] [--port 6380] [--bind 127.0.0.1] [--requirepass secret] ...
package main
