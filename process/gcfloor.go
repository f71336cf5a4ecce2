package process

// The collector's heap floor (--gc-heap-floor).
//
// Go's collector sets its next goal GOGC percent above the live heap. The
// key space lives in a few large arenas, so a server with few keys has a
// live heap of a few megabytes, and its goal is then only a few megabytes
// more. Traffic that allocates, such as gRPC calls, then triggers a
// collection every few milliseconds, and the server spends its CPU in the
// collector and in growing again the goroutine stacks that each collection
// had shrunk (bench/RESULTS.md, "Measurements behind the code's choices").
//
// The floor keeps the goal at least floor bytes above the live heap: after
// each collection it raises the percentage to the least one that does so
// (percentFor), when that is more than GOGC's. Once the live heap is
// larger than the floor (a large key space), GOGC alone decides, as
// before. The floor costs at most its size in garbage not yet collected; a
// server that allocates nothing per request (the RESP commands) barely
// grows its heap either way.

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// defaultHeapFloor is --gc-heap-floor's default: the floor past which
// make bench's RLS load stopped getting cheaper per call (bench/RESULTS.md,
// "Measurements behind the code's choices").
const defaultHeapFloor = 32 << 20

// maxGCPercent bounds the percentage the floor sets, whatever the floor
// asked for (a goal of 4 GB over a small heap).
const maxGCPercent = 100000

// heapFloor keeps the collector's goal at least floor bytes above the live
// heap. It adjusts after each collection, from a finalizer that it arms
// again each time.
type heapFloor struct {
	floor uint64
	base  int // the percentage GOGC gives (100 when unset)

	mu      sync.Mutex
	current int // the percentage in force
	stopped bool
	sample  []metrics.Sample
}

// gcCycle is the object whose finalizer runs after a collection; it holds
// a pointer so that it is not a tiny allocation (whose finalizer may never
// run).
type gcCycle struct{ h *heapFloor }

// startHeapFloor starts keeping the goal floor bytes above the live heap
// and returns the function that stops it and restores GOGC's percentage.
// A floor of 0, or GOGC=off, leaves the collector as it is.
func startHeapFloor(floor int64) (stop func()) {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if floor <= 0 || base < 0 {
		return func() {}
	}
	h := &heapFloor{floor: uint64(floor), base: base, current: base,
		sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	h.adjust()
	h.arm()
	return h.stop
}

func (h *heapFloor) arm() {
	runtime.SetFinalizer(&gcCycle{h: h}, func(c *gcCycle) {
		if c.h.adjust() {
			c.h.arm()
		}
	})
}

// adjust sets the percentage for the live heap that the last collection
// found, and reports whether the floor is still in force.
func (h *heapFloor) adjust() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return false
	}
	metrics.Read(h.sample)
	var live uint64
	if h.sample[0].Value.Kind() == metrics.KindUint64 {
		live = h.sample[0].Value.Uint64()
	}
	pct := percentFor(h.floor, live, h.base)
	// A change of less than an eighth is not worth the runtime's lock.
	if d := pct - h.current; d > h.current/8 || -d > h.current/8 {
		debug.SetGCPercent(pct)
		h.current = pct
	}
	return true
}

// percentFor is the least percentage that puts the goal floor bytes above
// live, or base when that is higher. The runtime's goal is the larger of
// live×(1+p/100) and its minimum heap, 4 MB×p/100, so that either term can
// reach live+floor: for a live heap under 4 MB the minimum heap does it
// with the smaller percentage.
func percentFor(floor, live uint64, base int) int {
	if live < 1<<20 {
		live = 1 << 20 // before the first collection the runtime reports 0
	}
	p := min((floor*100+live-1)/live, ((live+floor)*100+runtimeHeapMinimum-1)/runtimeHeapMinimum)
	if p > maxGCPercent {
		p = maxGCPercent
	}
	return max(base, int(p))
}

// runtimeHeapMinimum is the runtime's minimum heap goal at GOGC=100
// (defaultHeapMinimum in runtime/mgcpacer.go); it scales with GOGC.
const runtimeHeapMinimum = 4 << 20

func (h *heapFloor) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.stopped {
		h.stopped = true
		debug.SetGCPercent(h.base)
	}
}
