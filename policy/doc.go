// Package policy holds the operator's rules: named policies, per-subject
// overrides, rules files in the YAML format of envoyproxy/ratelimit, and the
// descriptor matching that turns a request into limits and state keys.
package policy
