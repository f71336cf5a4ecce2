// Package childproc ties a child process's life to the process that starts
// it, so that a server started by a test dies with a test binary that is
// killed (a timeout, ^C) instead of holding its port and files.
package childproc
