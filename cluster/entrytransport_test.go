package cluster

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// randomAppend returns an AppendEntries request with n entries of random
// content: empty and non-empty byte strings, every log type, zero and
// non-zero times.
func randomAppend(rng *rand.Rand, n int) *raft.AppendEntriesRequest {
	bs := func(max int) []byte {
		if rng.IntN(4) == 0 {
			return nil
		}
		b := make([]byte, 1+rng.IntN(max))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	req := &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersion(rng.IntN(4)), ID: bs(16), Addr: bs(24)},
		Term:      rng.Uint64(),
		//lint:ignore SA1019 the wire carries it: raft v1.7.3 still sends it
		Leader:            bs(24),
		PrevLogEntry:      rng.Uint64(),
		PrevLogTerm:       rng.Uint64() >> rng.IntN(64),
		LeaderCommitIndex: rng.Uint64() >> rng.IntN(64),
	}
	for range n {
		l := &raft.Log{Index: rng.Uint64(), Term: rng.Uint64() >> rng.IntN(64), Type: raft.LogType(rng.IntN(8)), Data: bs(3000), Extensions: bs(8)}
		if rng.IntN(3) > 0 {
			l.AppendedAt = time.Unix(0, rng.Int64()-rng.Int64())
		}
		req.Entries = append(req.Entries, l)
	}
	return req
}

// sameAppend compares two requests field by field; times by their instant.
func sameAppend(a, b *raft.AppendEntriesRequest) bool {
	//lint:ignore SA1019 the wire carries it: raft v1.7.3 still sends it
	if !reflect.DeepEqual(a.RPCHeader, b.RPCHeader) || a.Term != b.Term || !bytes.Equal(a.Leader, b.Leader) ||
		a.PrevLogEntry != b.PrevLogEntry || a.PrevLogTerm != b.PrevLogTerm || a.LeaderCommitIndex != b.LeaderCommitIndex ||
		len(a.Entries) != len(b.Entries) {
		return false
	}
	for i, x := range a.Entries {
		y := b.Entries[i]
		if x.Index != y.Index || x.Term != y.Term || x.Type != y.Type || !bytes.Equal(x.Data, y.Data) ||
			!bytes.Equal(x.Extensions, y.Extensions) || !x.AppendedAt.Equal(y.AppendedAt) || x.AppendedAt.IsZero() != y.AppendedAt.IsZero() {
			return false
		}
	}
	return true
}

// TestEntryWireRoundTrip: requests and answers decode as they were
// encoded, and within the size entryRequestSize promised.
func TestEntryWireRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		req := randomAppend(rng, rng.IntN(6))
		body := appendEntryRequest(nil, req)
		if len(body) > entryRequestSize(req) {
			t.Fatalf("request %d: %d bytes, above the bound %d", i, len(body), entryRequestSize(req))
		}
		var got raft.AppendEntriesRequest
		if err := parseEntryRequest(body, &got); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if !sameAppend(req, &got) {
			t.Fatalf("request %d decoded as\n%+v\nwant\n%+v", i, got, *req)
		}
		resp := raft.AppendEntriesResponse{
			RPCHeader: req.RPCHeader, Term: rng.Uint64(), LastLog: rng.Uint64() >> rng.IntN(64),
			Success: rng.IntN(2) == 0, NoRetryBackoff: rng.IntN(2) == 0,
		}
		var back raft.AppendEntriesResponse
		if rpcErr, err := parseEntryResponse(appendEntryResponse(nil, &resp, nil), &back); err != nil || rpcErr != "" || !reflect.DeepEqual(resp, back) {
			t.Fatalf("answer %d decoded as %+v, %q, %v; want %+v", i, back, rpcErr, err, resp)
		}
	}
	var back raft.AppendEntriesResponse
	if rpcErr, err := parseEntryResponse(appendEntryResponse(nil, nil, errors.New("term too old")), &back); err != nil || rpcErr != "term too old" {
		t.Fatalf("an error answer decoded as %q, %v", rpcErr, err)
	}
}

// TestEntryWireRefusesMalformedBodies: every truncation of a request or an
// answer, trailing bytes, an unknown time or flag byte, and an entry count
// the body cannot hold are refused, never a panic.
func TestEntryWireRefusesMalformedBodies(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	req := randomAppend(rng, 3)
	req.Entries[2].AppendedAt = time.Unix(5, 0)
	body := appendEntryRequest(nil, req)
	for n := range len(body) {
		if err := parseEntryRequest(body[:n], new(raft.AppendEntriesRequest)); err == nil {
			t.Fatalf("a request cut to %d of %d bytes was accepted", n, len(body))
		}
	}
	if err := parseEntryRequest(append(body[:len(body):len(body)], 0), new(raft.AppendEntriesRequest)); err == nil {
		t.Fatal("a request with a trailing byte was accepted")
	}
	bad := bytes.Clone(body)
	bad[len(bad)-1-binary.PutVarint(make([]byte, binary.MaxVarintLen64), 5e9)] = 2 // the last entry's time flag
	if err := parseEntryRequest(bad, new(raft.AppendEntriesRequest)); err == nil {
		t.Fatal("a time flag of 2 was accepted")
	}
	// Eight header fields of one byte each, then a count of 2^40 entries.
	huge := binary.AppendUvarint([]byte{0, 0, 0, 1, 0, 0, 0, 0}, 1<<40)
	if err := parseEntryRequest(huge, new(raft.AppendEntriesRequest)); err == nil {
		t.Fatal("a count of 2^40 entries in a few bytes was accepted")
	}
	resp := appendEntryResponse(nil, &raft.AppendEntriesResponse{Term: 7, Success: true}, nil)
	for n := range len(resp) {
		if _, err := parseEntryResponse(resp[:n], new(raft.AppendEntriesResponse)); err == nil {
			t.Fatalf("an answer cut to %d of %d bytes was accepted", n, len(resp))
		}
	}
	resp[len(resp)-1] = 4
	if _, err := parseEntryResponse(resp, new(raft.AppendEntriesResponse)); err == nil {
		t.Fatal("an unknown flag was accepted")
	}
	if _, err := parseEntryResponse([]byte{1, 0}, new(raft.AppendEntriesResponse)); err == nil {
		t.Fatal("an empty error text was accepted")
	}
}

// FuzzEntryWire: any body either is refused or decodes to a request that
// encodes back to the same bytes.
func FuzzEntryWire(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := range 4 {
		f.Add(appendEntryRequest(nil, randomAppend(rng, n)))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req raft.AppendEntriesRequest
		if parseEntryRequest(body, &req) != nil {
			return
		}
		again := appendEntryRequest(nil, &req)
		var back raft.AppendEntriesRequest
		if err := parseEntryRequest(again, &back); err != nil || !sameAppend(&req, &back) {
			t.Fatalf("a decoded request did not survive its own encoding: %v", err)
		}
		_, _ = parseEntryResponse(body, new(raft.AppendEntriesResponse))
	})
}

// answerAppends answers every AppendEntries that reaches tr with answer,
// after passing the request on got; it stops when stop closes.
func answerAppends(tr raft.Transport, got chan<- *raft.AppendEntriesRequest, answer func(*raft.AppendEntriesRequest) (*raft.AppendEntriesResponse, error), stop <-chan struct{}) {
	for {
		select {
		case rpc := <-tr.Consumer():
			req, ok := rpc.Command.(*raft.AppendEntriesRequest)
			if !ok {
				rpc.Respond(nil, errors.New("not an AppendEntries"))
				continue
			}
			got <- req
			rpc.Respond(answer(req))
		case <-stop:
			return
		}
	}
}

func newTestEntryTransport(t *testing.T) *entryTransport {
	t.Helper()
	tr, _, err := newTCPTransport("127.0.0.1:0", "127.0.0.1:0", nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// idleEntryConns is how many entry connections tr keeps idle to target.
func idleEntryConns(tr *entryTransport, target raft.ServerAddress) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.pool[target])
}

// TestEntryTransportCarriesEntries: an AppendEntries with entries reaches
// the peer's consumer whole over an entry connection, and its answer, or
// the error the peer's raft gave, comes back; one without entries (a
// heartbeat) goes as raft's own RPC and reaches the same consumer.
func TestEntryTransportCarriesEntries(t *testing.T) {
	a, b := newTestEntryTransport(t), newTestEntryTransport(t)
	got := make(chan *raft.AppendEntriesRequest, 1)
	stop := make(chan struct{})
	defer close(stop)
	go answerAppends(b, got, func(req *raft.AppendEntriesRequest) (*raft.AppendEntriesResponse, error) {
		if req.Term == 13 {
			return nil, errors.New("refused at term 13")
		}
		return &raft.AppendEntriesResponse{RPCHeader: raft.RPCHeader{ID: []byte("b")}, Term: req.Term, LastLog: req.PrevLogEntry + uint64(len(req.Entries)), Success: true}, nil
	}, stop)
	rng := rand.New(rand.NewPCG(7, 8))
	target := b.LocalAddr()
	for i := range 20 {
		req := randomAppend(rng, 1+rng.IntN(5))
		req.Term = uint64(i + 100)
		var resp raft.AppendEntriesResponse
		if err := a.AppendEntries("b", target, req, &resp); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if r := <-got; !sameAppend(req, r) {
			t.Fatalf("append %d arrived as %+v", i, r)
		}
		if !resp.Success || resp.Term != req.Term || resp.LastLog != req.PrevLogEntry+uint64(len(req.Entries)) || string(resp.ID) != "b" {
			t.Fatalf("append %d answered %+v", i, resp)
		}
		if n := idleEntryConns(a, target); n != 1 {
			t.Fatalf("after append %d, %d idle entry connections; want 1 (the entry wire)", i, n)
		}
	}
	req := randomAppend(rng, 1)
	req.Term = 13
	err := a.AppendEntries("b", target, req, new(raft.AppendEntriesResponse))
	if err == nil || err.Error() != "refused at term 13" {
		t.Fatalf("an answer of an error came back as %v", err)
	}
	<-got
	big := randomAppend(rng, 1)
	big.Entries[0].Data = bytes.Repeat([]byte("x"), 2*keptFrame)
	if err := a.AppendEntries("b", target, big, new(raft.AppendEntriesResponse)); err != nil {
		t.Fatalf("an entry of %d bytes: %v", 2*keptFrame, err)
	}
	if r := <-got; !sameAppend(big, r) {
		t.Fatal("the large entry arrived changed")
	}
	a.mu.Lock()
	for _, c := range a.pool[target] {
		if cap(c.out) > keptFrame {
			t.Errorf("an idle connection keeps %d bytes of room after a large request", cap(c.out))
		}
	}
	a.mu.Unlock()
	hb := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{Addr: []byte("a")}, Term: 14}
	var resp raft.AppendEntriesResponse
	if err := a.AppendEntries("b", target, hb, &resp); err != nil || !resp.Success {
		t.Fatalf("a heartbeat: %+v, %v", resp, err)
	}
	if r := <-got; r.Term != 14 || len(r.Entries) != 0 {
		t.Fatalf("the heartbeat arrived as %+v", r)
	}
}

// TestEntryTransportFallsBackToRaftsOwnRPC: a peer with raft's plain
// NetworkTransport (an older sluice) closes the entry connection at its
// handshake; the AppendEntries then goes as raft's own RPC, and so do the
// next ones, without another handshake.
func TestEntryTransportFallsBackToRaftsOwnRPC(t *testing.T) {
	a := newTestEntryTransport(t)
	old, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 2*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	got := make(chan *raft.AppendEntriesRequest, 1)
	stop := make(chan struct{})
	defer close(stop)
	go answerAppends(old, got, func(req *raft.AppendEntriesRequest) (*raft.AppendEntriesResponse, error) {
		return &raft.AppendEntriesResponse{Term: req.Term, Success: true}, nil
	}, stop)
	rng := rand.New(rand.NewPCG(9, 10))
	for i := range 3 {
		req := randomAppend(rng, 2)
		for _, l := range req.Entries {
			l.AppendedAt = time.Time{} // raft's msgpack keeps a time only to the microsecond or so
		}
		var resp raft.AppendEntriesResponse
		if err := a.AppendEntries("old", old.LocalAddr(), req, &resp); err != nil || !resp.Success || resp.Term != req.Term {
			t.Fatalf("append %d to an old peer: %+v, %v", i, resp, err)
		}
		if r := <-got; !sameAppend(req, r) {
			t.Fatalf("append %d arrived as %+v", i, r)
		}
		if !a.isLegacy(old.LocalAddr()) {
			t.Fatalf("after append %d the old peer is not marked", i)
		}
	}
}

// TestEntryTransportClosesWhatItCannotRead: an entry connection that sends
// a malformed frame, or announces one above maxEntryFrame, or asks for an
// unknown version, is closed; the transport goes on serving others.
func TestEntryTransportClosesWhatItCannotRead(t *testing.T) {
	b := newTestEntryTransport(t)
	got := make(chan *raft.AppendEntriesRequest, 1)
	stop := make(chan struct{})
	defer close(stop)
	go answerAppends(b, got, func(req *raft.AppendEntriesRequest) (*raft.AppendEntriesResponse, error) {
		return &raft.AppendEntriesResponse{Term: req.Term, Success: true}, nil
	}, stop)
	frame := func(body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	for name, tc := range map[string]struct {
		version byte
		send    []byte
	}{
		"a malformed frame":      {entryVersion, frame([]byte{0, 1, 2, 3})},
		"a frame above the most": {entryVersion, binary.BigEndian.AppendUint32(nil, maxEntryFrame+1)},
		"an unknown version":     {entryVersion + 1, nil},
	} {
		c, err := net.Dial("tcp", string(b.LocalAddr()))
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		r := bufio.NewReader(c)
		if _, err := c.Write(append([]byte{entryMagic, tc.version}, tc.send...)); err != nil {
			t.Fatal(err)
		}
		ack, err := r.ReadByte()
		want := entryVersion
		if tc.version != entryVersion {
			want = 0
		}
		if err != nil || ack != want {
			t.Fatalf("%s: the handshake answered %d, %v; want %d", name, ack, err, want)
		}
		if n, err := r.Read(make([]byte, 1)); err == nil {
			t.Fatalf("%s: the connection stayed open (read %d bytes)", name, n)
		} else if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset") {
			t.Fatalf("%s: %v; want the connection closed", name, err)
		}
		c.Close()
	}
	a := newTestEntryTransport(t)
	req := randomAppend(rand.New(rand.NewPCG(11, 12)), 2)
	var resp raft.AppendEntriesResponse
	if err := a.AppendEntries("b", b.LocalAddr(), req, &resp); err != nil || !resp.Success {
		t.Fatalf("after the bad connections: %+v, %v", resp, err)
	}
	<-got
}

// listFSM keeps the data of every command it applies.
type listFSM struct {
	mu   sync.Mutex
	data []string
}

func (f *listFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.data = append(f.data, string(l.Data))
	return nil
}

func (f *listFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, errors.New("no snapshots here") }
func (f *listFSM) Restore(io.ReadCloser) error         { return errors.New("no snapshots here") }

func (f *listFSM) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.data...)
}

// earlierTransport is the transport of an earlier sluice: raft's
// NetworkTransport with pipelined replication refused (see
// entryTransport.AppendEntriesPipeline; raft's pipeline can deadlock a
// leader's Shutdown).
type earlierTransport struct{ *raft.NetworkTransport }

func (earlierTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// TestRaftGroupOfOldAndNewTransports: a raft group whose members are two
// entry transports and one plain NetworkTransport (a node of an earlier
// sluice, as in a rolling upgrade) replicates every command to every
// member, whichever of them leads: commands go from a new leader to the
// old member in raft's own RPCs, and from the old leader to the new ones.
func TestRaftGroupOfOldAndNewTransports(t *testing.T) {
	plain, err := raft.NewTCPTransport("127.0.0.1:0", nil, 3, 2*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	old := earlierTransport{plain}
	trans := []raft.Transport{newTestEntryTransport(t), newTestEntryTransport(t), old}
	t.Cleanup(func() { old.Close() })
	var servers []raft.Server
	for i, tr := range trans {
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(fmt.Sprint("m", i)), Address: tr.LocalAddr()})
	}
	fsms := make([]*listFSM, len(trans))
	rafts := make([]*raft.Raft, len(trans))
	for i, tr := range trans {
		c := raft.DefaultConfig()
		c.LocalID = servers[i].ID
		fastRaft(c)
		c.Logger = hclog.NewNullLogger()
		logs := raft.NewInmemStore()
		fsms[i] = &listFSM{}
		r, err := raft.NewRaft(c, fsms[i], logs, logs, raft.NewInmemSnapshotStore(), tr)
		if err != nil {
			t.Fatal(err)
		}
		rafts[i] = r
		t.Cleanup(func() { r.Shutdown().Error() })
	}
	if err := rafts[0].BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
		t.Fatal(err)
	}
	leader := func() int {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			for i, r := range rafts {
				if r.State() == raft.Leader {
					return i
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal("no leader within 10 s")
		return -1
	}
	var want []string
	for round, to := range []int{-1, 2, 0, 1, 2} {
		l := leader()
		if to >= 0 && l != to {
			if err := rafts[l].LeadershipTransferToServer(servers[to].ID, servers[to].Address).Error(); err != nil {
				t.Fatalf("round %d: leadership to %s: %v", round, servers[to].ID, err)
			}
			if l = leader(); l != to {
				t.Fatalf("round %d: %s leads, not %s", round, servers[l].ID, servers[to].ID)
			}
		}
		for k := range 50 {
			cmd := fmt.Sprintf("round %d command %d from %s", round, k, servers[l].ID)
			if err := rafts[l].Apply([]byte(cmd), 5*time.Second).Error(); err != nil {
				t.Fatalf("%s: %v", cmd, err)
			}
			want = append(want, cmd)
		}
	}
	waitFor(t, 10*time.Second, func() bool {
		for _, f := range fsms {
			if len(f.list()) < len(want) {
				return false
			}
		}
		return true
	})
	for i, f := range fsms {
		if got := f.list(); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s applied %d commands, not the %d in order", servers[i].ID, len(got), len(want))
		}
	}
	for i := range 2 {
		if !trans[i].(*entryTransport).isLegacy(old.LocalAddr()) {
			t.Errorf("%s never fell back to raft's own RPCs for the old member", servers[i].ID)
		}
	}
}
