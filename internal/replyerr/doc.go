// Package replyerr is the error vocabulary of the server's replies: the
// type of a reply error, Redis's error codes, and the one rule that gives a
// reply error its code (Line) and writes it (Append).
package replyerr
