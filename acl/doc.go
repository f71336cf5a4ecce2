// Package acl holds users and their permissions with the syntax, the
// semantics and the wording of Redis 7's ACL: rules, a command registry with
// categories and key positions, compiled per-user permission checks, the
// ACL LOG, the aclfile format and a deterministic encoding for replication.
package acl
