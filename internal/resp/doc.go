// Package resp is a small client-side codec of the Redis protocol (RESP2
// and RESP3) that the load generators and the cluster's forwarder share:
// commands out, replies in, without allocating once its buffers have grown.
package resp
