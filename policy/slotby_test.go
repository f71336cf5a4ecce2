package policy

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/keyslot"
)

const slottedRules = `
domain: api
slot_by: user_id
descriptors:
  - key: user_id
    rate_limit: {unit: second, requests_per_unit: 5}
    descriptors:
      - key: path
        rate_limit: {unit: minute, requests_per_unit: 7}
  - key: tenant
    descriptors:
      - key: user_id
        rate_limit: {unit: hour, requests_per_unit: 9}
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 3}
    shadow_mode: true
`

func parseSlotted(t *testing.T, text string) *RuleSet {
	t.Helper()
	rs, err := Parse([]File{{Name: "rules.yaml", Data: []byte(text)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func planKey(t *testing.T, rs *RuleSet, domain string, kv ...string) string {
	t.Helper()
	var d Descriptor
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, Entry{Key: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	var p Plan
	if err := rs.Plan(&p, []byte(domain), 1, []Descriptor{d}); err != nil {
		t.Fatal(err)
	}
	return string(p.Items[0].Key)
}

func TestSlotByKeys(t *testing.T) {
	rs := parseSlotted(t, slottedRules)
	cases := []struct {
		kv   []string
		want string
	}{
		{[]string{"user_id", "42"}, "rls:api:fixed:{user_id=42}"},
		{[]string{"user_id", "42", "path", "/a{b}"}, "rls:api:fixed:{user_id=42}:path=/a%7Bb%7D"},
		{[]string{"tenant", "t{1}", "user_id", "42"}, "rls:api:fixed:tenant=t%7B1%7D:{user_id=42}"},
		{[]string{"user_id", ""}, "rls:api:fixed:{user_id=}"},
		{[]string{"user_id", "a}b{"}, "rls:api:fixed:{user_id=a%7Db%7B}"},
		{[]string{"remote_address", "10.0.0.1"}, "rls:api:fixed:remote_address=10.0.0.1"},
	}
	for _, c := range cases {
		if got := planKey(t, rs, "api", c.kv...); got != c.want {
			t.Errorf("key of %q = %q; want %q", c.kv, got, c.want)
		}
	}
	// Every key of user_id=42 lies in the slot of "user_id=42".
	want := keyslot.Of([]byte("user_id=42"))
	for _, kv := range [][]string{{"user_id", "42"}, {"user_id", "42", "path", "/x"}, {"tenant", "t9", "user_id", "42"}} {
		if got := StoredSlot([]byte(planKey(t, rs, "api", kv...))); got != want {
			t.Errorf("slot of %q = %d; want %d", kv, got, want)
		}
	}
	// An empty value still makes a tag: the key of user_id= has one slot.
	if a, b := StoredSlot([]byte(planKey(t, rs, "api", "user_id", ""))), keyslot.Of([]byte("user_id=")); a != b {
		t.Errorf("slot of user_id= is %d; want %d", a, b)
	}
}

func TestSlotByLeavesOtherKeys(t *testing.T) {
	plain := strings.Replace(slottedRules, "slot_by: user_id\n", "", 1)
	rs := parseSlotted(t, plain)
	if got, want := planKey(t, rs, "api", "user_id", "42", "path", "/a{b}"), "rls:api:fixed:user_id=42:path=/a{b}"; got != want {
		t.Errorf("key without slot_by = %q; want %q", got, want)
	}
	// The content hash of a set without slot_by is the one it had before
	// slot_by existed (computed at commit eea3845): the encoding writes
	// slot_by only when a domain has one.
	if got, want := fmt.Sprintf("%x", rs.Hash()), "ef5e9cfdeee9c5c1f40194d4013983fda3e967bfb49ff10300150e41714afe44"; got != want {
		t.Errorf("hash without slot_by = %s; want %s", got, want)
	}
	if rs.Hash() == parseSlotted(t, slottedRules).Hash() {
		t.Error("slot_by does not change the hash")
	}
}

func TestSlotByCodec(t *testing.T) {
	rs := parseSlotted(t, slottedRules)
	back, err := DecodeRuleSet(rs.Encode(nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if back.SlotBy("api") != "user_id" || back.Hash() != rs.Hash() {
		t.Fatalf("decoded slot_by %q, hash equal %v", back.SlotBy("api"), back.Hash() == rs.Hash())
	}
	plain := parseSlotted(t, strings.Replace(slottedRules, "slot_by: user_id\n", "", 1))
	if back, err = DecodeRuleSet(plain.Encode(nil), Options{}); err != nil || back.SlotBy("api") != "" {
		t.Fatalf("decoded %v, slot_by %q", err, back.SlotBy("api"))
	}
}

func TestSlotByFaults(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"domain: a\nslot_by: ''\n", "slot_by must name a descriptor key"},
		{"domain: a\nslot_by: [x]\n", "slot_by must be a string"},
		{"domain: a\ndescriptors:\n  - key: k\n    slot_by: k\n", "slot_by belongs at the top of a file"},
		{"slot_by: k\npolicies: [{name: p, algorithm: fixed, limit: 5, window: 1m}]\n", "slot_by needs a domain in the same file"},
	} {
		_, err := Parse([]File{{Name: "f.yaml", Data: []byte(c.text)}}, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v; want %q", c.text, err, c.want)
		}
	}
}

func TestCheckSlotted(t *testing.T) {
	if err := parseSlotted(t, slottedRules).CheckSlotted(); err != nil {
		t.Fatalf("slotted rules refused: %v", err)
	}
	for _, c := range []struct{ text, want string }{
		{strings.Replace(slottedRules, "slot_by: user_id\n", "", 1), "domain 'api' needs slot_by"},
		{slottedRules + "  - key: path\n    rate_limit: {unit: second, requests_per_unit: 1}\n",
			"its rule api.path has no 'user_id' entry"},
	} {
		err := parseSlotted(t, c.text).CheckSlotted()
		if !errors.Is(err, ErrNotSlotted) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckSlotted = %v; want %q", err, c.want)
		}
	}
	// Rules that never refuse a call need no slot_by entry.
	ok := slottedRules + "  - key: path\n    rate_limit: {unlimited: true}\n" +
		"  - key: q\n    quota_mode: true\n    rate_limit: {unit: second, requests_per_unit: 1}\n" +
		"  - key: z\n    rate_limit: {unit: second, requests_per_unit: 0}\n"
	if err := parseSlotted(t, ok).CheckSlotted(); err != nil {
		t.Errorf("CheckSlotted = %v; want nil", err)
	}
}
