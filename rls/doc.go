// Package rls serves Envoy's rate limit service API (envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit, gRPC) as a thin adapter over the policy package's rules and a keyspace's decisions.
package rls
