package rls

import (
	"math"
	"unsafe"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/policy"
)

// call is one ShouldRateLimit call's working memory: the request in the
// policy package's form, the plan, the decisions and their outcomes. Calls
// reuse them through Service's pool, so that reading, planning and deciding
// do not allocate in steady state; only the protobuf response does. A call
// belongs to one goroutine at a time.
type call struct {
	descs   []policy.Descriptor
	entries []policy.Entry // the backing of every descriptor's Entries
	extra   []descExtra    // per descriptor: what Plan does not take
	plan    policy.Plan

	reqs     []algorithms.Request // the decisions asked of the keyspace
	idx      []int                // reqs[k] decides plan.Items[idx[k]]
	outs     []algorithms.Outcome // reqs' outcomes
	outcomes []algorithms.Outcome // per item, what Compose reads
	resp     policy.Response

	name []byte // scratch of the header names
}

// descExtra is what the RLS v3 API asks of a descriptor beyond what
// policy.Plan takes, applied by the adapter around it.
type descExtra struct {
	// negative: is_negative_hits; the descriptor's hits are a refund.
	negative bool
	// mult: the limit override's unit_multiplier (1 without one); its
	// window is mult units long.
	mult uint32
}

// readRequest puts req into c: one policy.Descriptor per request
// descriptor, with its entries, its limit override and its hits_addend.
// The entries' keys and values are the request's own strings, viewed as
// bytes without a copy: policy reads them during the call only and never
// writes them. It refuses what sluice cannot decide: an override with an
// unknown unit (envoyproxy/ratelimit panics on one), a unit_multiplier of
// 0 or one that makes the window longer than int64 nanoseconds, a
// hits_addend above MaxInt64, requests past maxDescriptors or maxEntries,
// and a descriptor whose domain, keys and values add up to more than
// maxKey bytes (0: no limit), the longest key it may make. An empty domain or no descriptors are left to Plan, which
// answers them in envoyproxy/ratelimit's words.
func readRequest(c *call, req *rlsv3.RateLimitRequest, maxKey int64) error {
	if req == nil {
		return errNoRequest
	}
	if len(req.Descriptors) > maxDescriptors {
		return errTooManyDescs
	}
	n := 0
	for _, d := range req.Descriptors {
		if len(d.GetEntries()) > maxEntries {
			return errTooManyEntries
		}
		n += len(d.GetEntries())
		if maxKey > 0 {
			size := int64(len(req.GetDomain()))
			for _, e := range d.GetEntries() {
				size += int64(len(e.GetKey()) + len(e.GetValue()))
			}
			if size > maxKey {
				return keyTooLong(size, maxKey)
			}
		}
	}
	c.descs, c.extra = c.descs[:0], c.extra[:0]
	if cap(c.entries) < n {
		c.entries = make([]policy.Entry, 0, n)
	}
	c.entries = c.entries[:0]
	for _, d := range req.Descriptors {
		start := len(c.entries)
		for _, e := range d.GetEntries() {
			c.entries = append(c.entries, policy.Entry{Key: bytesOf(e.GetKey()), Value: bytesOf(e.GetValue())})
		}
		pd := policy.Descriptor{Entries: c.entries[start:len(c.entries):len(c.entries)]}
		x := descExtra{negative: d.GetIsNegativeHits(), mult: 1}
		if err := readOverride(&pd, &x, d.GetLimit()); err != nil {
			return err
		}
		if h := d.GetHitsAddend(); h != nil {
			if h.GetValue() > math.MaxInt64 {
				return errHitsTooLarge
			}
			pd.Hits, pd.HitsSet = int64(h.GetValue()), true
		}
		c.descs = append(c.descs, pd)
		c.extra = append(c.extra, x)
	}
	return nil
}

// readOverride reads a descriptor's limit override, if it has one.
func readOverride(pd *policy.Descriptor, x *descExtra, o *ratelimitv3.RateLimitDescriptor_RateLimitOverride) error {
	if o == nil {
		return nil
	}
	unit := policy.Unit(o.GetUnit())
	if unit == policy.UnitUnknown || unit.Seconds() == 0 || int32(o.GetUnit()) != int32(unit) {
		return errOverrideUnit
	}
	if m := o.GetUnitMultiplier(); m != nil {
		if m.GetValue() == 0 {
			return errMultiplierZero
		}
		if uint64(m.GetValue()) > uint64(math.MaxInt64/unit.Nanos()) {
			return errPeriodTooLong
		}
		x.mult = m.GetValue()
	}
	pd.Limit = policy.EnvoyLimit{RequestsPerUnit: o.GetRequestsPerUnit(), Unit: unit}
	return nil
}

// adjust applies to the planned items what Plan does not know: an
// override's unit_multiplier lengthens its window, and is_negative_hits
// turns the hits into a refund.
func (c *call) adjust() {
	for i := range c.plan.Items {
		it, x := &c.plan.Items[i], &c.extra[i]
		if x.mult > 1 && it.Flags&policy.FlagOverride != 0 && it.Decides() {
			it.Limit.Period *= int64(x.mult) // readOverride bounded unit × mult
		}
		if x.negative {
			it.Hits = -it.Hits
		}
	}
}

// bytesOf views s as bytes without copying. The bytes must not be written.
func bytesOf(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
