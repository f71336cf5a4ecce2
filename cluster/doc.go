// Package cluster replicates the store through Raft (hashicorp/raft with
// raft-boltdb): decisions are batched into log entries stamped with the
// leader's clock, the FSM applies them to a store, and any node serves any
// client by forwarding to the leader.
package cluster
