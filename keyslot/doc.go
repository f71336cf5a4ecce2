// Package keyslot computes the Redis Cluster hash slot of a key: CRC16
// (XMODEM) of the key, or of its {hash tag}, modulo 16384, exactly as
// Redis's keyHashSlot.
package keyslot
