package process

import (
	"strings"
	"testing"
)

func TestGRPCFlags(t *testing.T) {
	for _, bad := range [][]string{
		{"--grpc-bind", "8081"},
		{"--grpc-headers", "yes"},
		{"--grpc-unknown-domain", "deny"},
		{"--grpc-batch", "all"},
		{"--grpc-reflection", "maybe"},
		{"--grpc-count-over-limit", "sometimes"},
	} {
		if _, err := parseArgs(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	cfg, err := parseArgs([]string{"--grpc-bind", "127.0.0.1:8081", "--grpc-headers", "IETF", "--grpc-batch", "call",
		"--grpc-unknown-domain", "over-limit", "--grpc-count-over-limit", "yes", "--policies", "a.yaml", "rules.d"})
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.rls
	if cfg.grpcBind != "127.0.0.1:8081" || strings.Join(cfg.policies, ",") != "a.yaml,rules.d" ||
		c.Headers != 1 || c.Batch != 1 || c.UnknownDomain != 1 || !c.CountOverLimit {
		t.Fatalf("config %+v, service config %+v", cfg, c)
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.0.0.2": true, "::1": true, "localhost": true,
		"0.0.0.0": false, "::": false, "": false, "10.1.2.3": false, "example.com": false,
	} {
		if got := isLoopback(host); got != want {
			t.Errorf("isLoopback(%q) = %v; want %v", host, got, want)
		}
	}
}
