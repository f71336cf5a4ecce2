package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

// The RLS load generators' transports: grpc-go's client, and the lean
// one, the same calls carried by h2Conn (rlsh2.go). For the lean one every
// request is encoded once, before the run, as its whole gRPC message; a
// call sends one HEADERS frame (a prebuilt HPACK block) and one DATA frame,
// and its answer is decoded into the caller's own RateLimitResponse and
// checked like grpc-go's.

// rlsPath is ShouldRateLimit's HTTP/2 path.
const rlsPath = rlsv3.RateLimitService_ShouldRateLimit_FullMethodName

// leanTransport makes calls over h2Conns.
type leanTransport struct {
	conns  []*h2Conn
	bodies [][]byte // the requests as gRPC messages, 5-byte prefix and protobuf
}

// dialLean opens conns connections to addr and encodes reqs.
func dialLean(addr string, conns int, reqs []*rlsv3.RateLimitRequest) (*leanTransport, error) {
	bodies, err := grpcMessages(reqs)
	if err != nil {
		return nil, err
	}
	t := &leanTransport{bodies: bodies}
	for i := 0; i < conns; i++ {
		c, err := dialH2(addr, rlsPath)
		if err != nil {
			t.close()
			return nil, err
		}
		t.conns = append(t.conns, c)
	}
	return t, nil
}

// grpcMessages encodes msgs as uncompressed gRPC messages, in one slab.
func grpcMessages[M proto.Message](msgs []M) ([][]byte, error) {
	var slab []byte
	ends := make([]int, len(msgs))
	for i, m := range msgs {
		at := len(slab)
		slab = append(slab, 0, 0, 0, 0, 0)
		var err error
		if slab, err = (proto.MarshalOptions{}).MarshalAppend(slab, m); err != nil {
			return nil, err
		}
		binary.BigEndian.PutUint32(slab[at+1:], uint32(len(slab)-at-5))
		ends[i] = len(slab)
	}
	out := make([][]byte, len(msgs))
	at := 0
	for i, end := range ends {
		out[i] = slab[at:end:end]
		at = end
	}
	return out, nil
}

func (t *leanTransport) caller(i int) rlsCall {
	c := t.conns[i%len(t.conns)]
	s := newH2Stream()
	resp := new(rlsv3.RateLimitResponse)
	return func(k int) (*rlsv3.RateLimitResponse, error) {
		if err := c.call(s, t.bodies[k]); err != nil {
			return nil, err
		}
		msg, err := s.grpcAnswer()
		if err != nil {
			return nil, err
		}
		if err := proto.Unmarshal(msg, resp); err != nil {
			return nil, fmt.Errorf("decoding the answer: %w", err)
		}
		return resp, nil
	}
}

func (t *leanTransport) close() {
	for _, c := range t.conns {
		c.Close()
	}
}

// rlsTransport is a load generator's way of making calls: grpc-go's client
// or the lean HTTP/2 one (rlsh2.go).
type rlsTransport interface {
	// caller returns a call function for one caller, on connection i.
	caller(i int) rlsCall
	// close closes the connections; calls under way end with an error.
	close()
}

// The load generators.
const (
	rlsGenLean = "lean"
	rlsGenGRPC = "grpc"
)

// dialRLSGen connects the generator gen to addr with conns connections,
// for the prebuilt requests reqs.
func dialRLSGen(gen, addr string, conns int, reqs []*rlsv3.RateLimitRequest) (rlsTransport, error) {
	if gen == rlsGenGRPC {
		cs, err := dialRLS(addr, conns)
		if err != nil {
			return nil, err
		}
		return &grpcTransport{conns: cs, reqs: reqs}, nil
	}
	return dialLean(addr, conns, reqs)
}

// grpcTransport makes the calls with grpc-go's client.
type grpcTransport struct {
	conns []*grpc.ClientConn
	reqs  []*rlsv3.RateLimitRequest
}

func (g *grpcTransport) caller(i int) rlsCall {
	client := rlsv3.NewRateLimitServiceClient(g.conns[i%len(g.conns)])
	return func(k int) (*rlsv3.RateLimitResponse, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return client.ShouldRateLimit(ctx, g.reqs[k])
	}
}

func (g *grpcTransport) close() {
	for _, c := range g.conns {
		c.Close()
	}
}

// dialRLS opens conns grpc-go connections to addr.
func dialRLS(addr string, conns int) ([]*grpc.ClientConn, error) {
	var out []*grpc.ClientConn
	for i := 0; i < conns; i++ {
		c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			for _, o := range out {
				o.Close()
			}
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}
