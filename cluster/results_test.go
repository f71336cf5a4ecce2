package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/store"
)

// appliedFuture is an entry's raft.ApplyFuture once the state machine has
// applied it.
type appliedFuture struct{ resp applyResponse }

func (f appliedFuture) Error() error          { return nil }
func (f appliedFuture) Response() any         { return f.resp }
func (f appliedFuture) Index() uint64         { return 1 }
func (f appliedFuture) Done() <-chan struct{} { return nil }

var _ raft.ApplyFuture = appliedFuture{}

// entryResults applies (in effect) an entry of n decisions: results whose
// every outcome is allowed, as the state machine hands them to finish.
func entryResults(p *proposals, n int) []result {
	rs := p.results(n)
	for i := range rs {
		rs[i].out = algorithms.Outcome{Result: algorithms.Result{Allowed: true, Remaining: int64(i)}}
	}
	return rs
}

// An entry whose callers all copy their results as they are told of them
// (the decisions of DecideAsync) gives its results back, and the next
// entry gets them cleared.
func TestFinishGivesBackResultsEveryCallerCopied(t *testing.T) {
	b := &batcher{props: &proposals{}, window: window{limit: 1, wake: make(chan struct{}, 1)}}
	rs := entryResults(b.props, 3)
	var copied []algorithms.Outcome
	notify := func(got []result, err error) {
		if err != nil {
			t.Errorf("notify: %v", err)
		}
		for _, r := range got {
			copied = append(copied, r.out)
		}
	}
	subs := []*submission{
		{reqs: make([]algorithms.Request, 2), notify: notify},
		{reqs: make([]algorithms.Request, 1), notify: notify},
	}
	b.window.inflight = 1
	b.finish(appliedFuture{applyResponse{results: rs}}, subs, 3, time.Now(), nil)
	if len(copied) != 3 || copied[2].Result.Remaining != 2 || !copied[0].Result.Allowed {
		t.Fatalf("the callers copied %+v; want the entry's 3 outcomes", copied)
	}
	if len(b.props.spare) != 1 {
		t.Fatalf("%d results kept for reuse; want the entry's", len(b.props.spare))
	}
	next := b.props.results(2)
	if &next[0] != &rs[0] {
		t.Fatal("the next entry got new results; want the ones given back")
	}
	for i, r := range next {
		if r != (result{}) {
			t.Fatalf("result %d of the next entry is %+v; want it cleared", i, r)
		}
	}
	if copied[2].Result.Remaining != 2 {
		t.Fatal("clearing the reused results changed what a caller copied")
	}
}

// An entry with a caller that waits and reads its results later (submit,
// submitAll) keeps them: nothing is given back, and a later entry cannot
// overwrite what that caller reads.
func TestFinishKeepsResultsAWaitingCallerReads(t *testing.T) {
	b := &batcher{props: &proposals{}, window: window{limit: 1, wake: make(chan struct{}, 1)}}
	rs := entryResults(b.props, 2)
	waiting := &submission{ops: make([]op, 1), done: make(chan struct{})}
	subs := []*submission{{reqs: make([]algorithms.Request, 1), notify: func([]result, error) {}}, waiting}
	b.window.inflight = 1
	b.finish(appliedFuture{applyResponse{results: rs}}, subs, 2, time.Now(), nil)
	<-waiting.done
	if len(b.props.spare) != 0 {
		t.Fatalf("%d results kept for reuse; want none while a caller may read them", len(b.props.spare))
	}
	other := entryResults(b.props, 2)
	if &other[0] == &rs[0] {
		t.Fatal("a later entry got the results a waiting caller reads")
	}
	if len(waiting.results) != 1 || waiting.results[0].out.Result.Remaining != 1 {
		t.Fatalf("the waiting caller reads %+v; want its own outcome", waiting.results)
	}
}

// A failed entry gives nothing back: its callers got an error, and no
// results exist.
func TestFinishOfAFailedEntryGivesNothingBack(t *testing.T) {
	b := &batcher{props: &proposals{}, window: window{limit: 1, wake: make(chan struct{}, 1)}}
	var got error
	subs := []*submission{{reqs: make([]algorithms.Request, 1), notify: func(_ []result, err error) { got = err }}}
	b.window.inflight = 1
	b.finish(appliedFuture{applyResponse{err: errors.New("entry 1: undecodable")}}, subs, 1, time.Now(), nil)
	if got == nil || len(b.props.spare) != 0 {
		t.Fatalf("notify got %v and %d results were kept; want the entry's error and none", got, len(b.props.spare))
	}
}

// The leader's state machine applies its next entry of its own into the
// results given back, cleared, and decides the same as into new ones.
func TestLeaderAppliesIntoResultsGivenBack(t *testing.T) {
	f := newStateMachine(store.New(4), nil, nil)
	f.proposals = &proposals{}
	entry := func(keys ...string) []byte {
		ops := make([]op, len(keys))
		for i, k := range keys {
			ops[i] = token([]byte(k), 0)
		}
		data := appendBatch(nil, 1_800_000_000e9, ops)
		f.proposals.add(data)
		return data
	}
	first, _ := f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: entry("a", "b", "c")}).(applyResponse)
	if first.err != nil || len(first.results) != 3 {
		t.Fatalf("first entry: %+v", first)
	}
	f.proposals.giveBack(first.results)
	second, _ := f.Apply(&raft.Log{Index: 2, Type: raft.LogCommand, Data: entry("a", "d")}).(applyResponse)
	if second.err != nil || len(second.results) != 2 || &second.results[0] != &first.results[0] {
		t.Fatalf("second entry: %d results, err %v; want 2 in the results given back", len(second.results), second.err)
	}
	want := []int64{3, 4} // "a" decided twice, "d" once, of a capacity of 5
	for i, r := range second.results {
		if !r.out.Result.Allowed || r.out.Result.Remaining != want[i] || r.out.Err != nil {
			t.Fatalf("result %d: %+v; want allowed with %d remaining", i, r.out, want[i])
		}
	}
}
