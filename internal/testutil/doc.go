// Package testutil holds what the module's tests share: a sluice binary built once per source
// tree, sluice and redis-server processes started on ports they bind themselves, and a raw
// RESP client; it imports no package of the product.
package testutil
