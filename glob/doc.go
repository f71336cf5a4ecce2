// Package glob matches Redis glob patterns (SCAN MATCH, CONFIG GET, ACL key
// patterns) exactly as Redis 7.0's stringmatchlen does, in time linear in
// the subject, without recursion.
package glob
