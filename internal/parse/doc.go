// Package parse reads the numbers sluice takes as text, once for every
// caller: Redis's integers (string2ll), and the durations and rates of the
// RL.* commands' grammar, which sluice's policies files share.
package parse
