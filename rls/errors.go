package rls

import (
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-rl/sluice/policy"
)

// The error vocabulary. A call that has no answer fails with a gRPC status:
// INVALID_ARGUMENT for a request sluice cannot read (with
// envoyproxy/ratelimit's wording where it has one), NOT_FOUND for an
// unknown domain when Config.UnknownDomain is UnknownDomainError, and the
// keyspace's error, mapped to a code (decisionError), when a decision
// failed. Envoy's rate limit filter treats every error alike: it admits the
// request, or denies it with failure_mode_deny.
var (
	errNoRequest        = status.Error(codes.InvalidArgument, "no request")
	errOverrideUnit     = status.Error(codes.InvalidArgument, "a descriptor's limit override has an unknown unit")
	errMultiplierZero   = status.Error(codes.InvalidArgument, "a descriptor's limit override has unit_multiplier 0")
	errPeriodTooLong    = status.Error(codes.InvalidArgument, "a descriptor's limit override spans more than 292 years (unit × unit_multiplier)")
	errHitsTooLarge     = status.Error(codes.InvalidArgument, "a descriptor's hits_addend is above 9223372036854775807")
	errTooManyEntries   = status.Error(codes.InvalidArgument, "a descriptor has more than 64 entries")
	errTooManyDescs     = status.Error(codes.InvalidArgument, "a request has more than 1024 descriptors")
	errUnknownDomainMsg = "unknown rate limit domain"
)

// Bounds on one request. Envoy sends a handful of descriptors of a few
// entries each; the bounds keep one call's work and memory small.
const (
	maxDescriptors = 1024
	maxEntries     = 64
)

// planError turns an error of policy.RuleSet.Plan into the call's status.
func planError(err error) error {
	switch {
	case errors.Is(err, policy.ErrEmptyDomain), errors.Is(err, policy.ErrNoDescriptors),
		errors.Is(err, policy.ErrNegativeHits), errors.Is(err, policy.ErrBadLimit):
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

// unknownDomain is the error of a call to a domain without rules when
// unknown domains fail (UnknownDomainError).
func unknownDomain(domain string) error {
	if len(domain) > 128 {
		domain = domain[:128]
	}
	return status.Errorf(codes.NotFound, "%s '%s'", errUnknownDomainMsg, domain)
}

// keyTooLong is the error of a descriptor whose domain, keys and values
// add up to size bytes, more than the longest key, maxKey.
func keyTooLong(size, maxKey int64) error {
	return status.Errorf(codes.InvalidArgument,
		"a descriptor's domain, keys and values add up to %d bytes, more than the longest key (%d bytes, proto-max-bulk-len)", size, maxKey)
}

// decisionError turns a keyspace's error (a Redis-style reply error) into
// the call's status: CLUSTERDOWN (no leader), MISCONF (the disk refuses
// writes), and MOVED and TRYAGAIN (a sharded cluster's slot is elsewhere
// or moving), where nothing was decided, are UNAVAILABLE, which a gRPC
// retry policy may retry; UNKNOWN (the outcome is unknown) is gRPC's
// UNKNOWN, which retry policies leave alone unless told to, so that no
// retry charges twice; OOM is RESOURCE_EXHAUSTED; WRONGTYPE, and CROSSSLOT
// (an all-or-nothing call whose descriptors' keys lie in different slots
// of a sharded cluster), are FAILED_PRECONDITION; anything else is
// INTERNAL. The text is the keyspace's.
func decisionError(err error) error {
	msg := err.Error()
	code := codes.Internal
	switch word, _, _ := strings.Cut(msg, " "); word {
	case "CLUSTERDOWN", "MISCONF", "MOVED", "TRYAGAIN":
		code = codes.Unavailable
	case "UNKNOWN":
		code = codes.Unknown
	case "OOM":
		code = codes.ResourceExhausted
	case "WRONGTYPE", "CROSSSLOT":
		code = codes.FailedPrecondition
	}
	return status.Error(code, msg)
}
