package policy

import (
	"errors"
	"fmt"
)

// A rules file's slot_by: <descriptor key> slots its domain's keys by that
// entry's value (keys.go): every descriptor with the same <key>=<value>
// entry keeps its state in one slot of a sharded cluster, so that a call's
// descriptors that share the entry are decided by one data group in one
// log entry, all or nothing (--grpc-batch call).

// ErrNotSlotted is the error of CheckSlotted.
var ErrNotSlotted = errors.New("--grpc-batch call in a sharded cluster decides a call's descriptors in one all-or-nothing " +
	"decision, which one data group makes only when their keys share a slot")

// SlotBy returns the slot_by key of domain's rules, "" without one.
func (rs *RuleSet) SlotBy(domain string) string {
	if rs == nil || rs.domains[domain] == nil {
		return ""
	}
	return rs.domains[domain].slotBy
}

// CheckSlotted reports, wrapping ErrNotSlotted, the first domain whose
// calls' all-or-nothing descriptors may lie in different slots: a domain
// without slot_by, or one with a rule that counts its hits against the call
// (a rate_limit that is neither unlimited, requests_per_unit 0, shadow_mode
// nor quota_mode) but has no entry of the slot_by key on its path. Under
// such rules a call's grouped descriptors share a slot whenever they carry
// the same slot_by value; a descriptor with its own limit (an RLS limit
// override) is slotted by its entries alike, and is refused with CROSSSLOT
// when they do not place it in the call's slot.
func (rs *RuleSet) CheckSlotted() error {
	if rs == nil {
		return nil
	}
	for _, d := range rs.order {
		if d.slotBy == "" {
			return fmt.Errorf("%w: domain '%s' needs slot_by: <descriptor key> in its rules file (for example slot_by: user_id)",
				ErrNotSlotted, d.name)
		}
		if r := unslotted(&d.root, d.slotBy, false); r != nil {
			return fmt.Errorf("%w: domain '%s' has slot_by: %s, but its rule %s has no '%s' entry on its path",
				ErrNotSlotted, d.name, d.slotBy, r.fullKey, d.slotBy)
		}
	}
	return nil
}

// unslotted returns the first rule below lv that joins a call's group
// without an entry of key on its path (under says one is above lv).
func unslotted(lv *level, key string, under bool) *rule {
	for _, r := range lv.list {
		here := under || r.key == key
		if l := r.limit; l != nil && !here && !l.unlimited && !l.deny() && !r.shadow && !r.quota {
			return r
		}
		if bad := unslotted(&r.children, key, here); bad != nil {
			return bad
		}
	}
	return nil
}
