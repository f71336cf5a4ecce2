// Package commands holds sluice's commands: the registry, argument parsing,
// the handlers and their replies, and each connection's session (auth, RESP
// version, name, READONLY, the work deferred to the end of a batch), behind
// the server package's Handler interface and against interfaces it defines
// for what lies behind it (Keyspace, Cluster, Persister, Shutdowner).
package commands
