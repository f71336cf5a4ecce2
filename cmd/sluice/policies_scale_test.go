package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A single node with the append-only log keeps each RL.POLICY SET or DEL
// as the one policy it changed: the log grows by one policy per change,
// not by the whole table, and a restart finds every policy.
func TestPolicyChangesLogOnePolicyEach(t *testing.T) {
	const n = 2000
	dir := t.TempDir()
	args := []string{"--dir", dir, "--appendonly", "yes", "--appendfsync", "no", "--save", "0"}
	p := start(t, args...)
	rdb := client(t, p)
	ctx := context.Background()
	pipe := rdb.Pipeline()
	for i := 0; i < n; i++ {
		pipe.Do(ctx, "RL.POLICY", "SET", fmt.Sprintf("key:%06d", i), "TOKEN", "10/s", "20")
	}
	pipe.Do(ctx, "RL.POLICY", "DEL", "key:000007")
	pipe.Do(ctx, "RL.POLICY", "SET", "key:000008", "FIXED", "5", "1m")
	cmds, err := pipe.Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cmds {
		if c.Err() != nil {
			t.Fatalf("command %d: %v", i, c.Err())
		}
	}
	p.killed(t)
	fi, err := os.Stat(filepath.Join(dir, "appendonly.aof"))
	if err != nil {
		t.Fatal(err)
	}
	// A policy of this shape encodes in about 40 bytes and its frame in
	// about 60; the whole table after each change would be n*n/2 policies.
	if per := fi.Size() / (n + 2); per > 200 {
		t.Fatalf("the log holds %d bytes for %d changes, %d a change; want at most 200 (one policy each)", fi.Size(), n+2, per)
	}

	q := start(t, args...)
	rdb = client(t, q)
	if got := mustDo(t, rdb, "INFO", "policies"); !strings.Contains(fmt.Sprint(got), fmt.Sprintf("policies_commands:%d\r\n", n-1)) {
		t.Fatalf("after the restart INFO policies reads:\n%v\nwant policies_commands:%d", got, n-1)
	}
	if got := policyFields(t, rdb, "key:000007"); got != "" {
		t.Fatalf("after the restart the deleted policy is back: %q", got)
	}
	if got, want := policyFields(t, rdb, "key:000008"), "key:000008 FIXED 5 0 "; got != want {
		t.Fatalf("after the restart RL.POLICY GET key:000008 = %q; want %q", got, want)
	}
	if got, want := policyFields(t, rdb, fmt.Sprintf("key:%06d", n-1)), fmt.Sprintf("key:%06d TOKEN 20 0 ", n-1); got != want {
		t.Fatalf("after the restart the last policy reads %q; want %q", got, want)
	}
}
