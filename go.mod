module github.com/sluice-rl/sluice

go 1.26

require (
	github.com/HdrHistogram/hdrhistogram-go v1.1.2
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/redis/go-redis/v9 v9.7.0
	github.com/tidwall/redcon v1.6.2
)

require (
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/tidwall/btree v1.1.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
)
