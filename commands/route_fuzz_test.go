package commands

import (
	"bytes"
	"testing"

	"github.com/sluice-rl/sluice/keyslot"
)

// FuzzCommandSlot: for any registered command and any arguments its arity
// admits, the router's key lookup never panics, names only argument
// positions (never the command's name), and commandSlot returns the slot
// of one of those keys, -1 only without any, or CROSSSLOT only when they
// span slots.
func FuzzCommandSlot(f *testing.F) {
	for i, c := range commandList {
		if len(c.keySpecs) > 0 || c.getKeys != nil {
			f.Add(uint16(i), []byte("k\x00{k}x\x001\x00k\x00TOKEN\x00a\x001/s\x005"))
		}
	}
	f.Add(uint16(0), []byte("2\x00a\x00b\x00c"))
	f.Fuzz(func(t *testing.T, which uint16, blob []byte) {
		cmd := commandList[int(which)%len(commandList)]
		args := append([][]byte{[]byte(cmd.name)}, bytes.Split(blob, []byte{0})...)
		if !cmd.arityOK(len(args)) {
			return
		}
		refs, _ := commandKeys(cmd, args, nil)
		slots := map[int]bool{}
		for _, k := range refs {
			if k.pos < 1 || k.pos >= len(args) {
				t.Fatalf("%s %q: a key at position %d", cmd.name, args[1:], k.pos)
			}
			slots[keyslot.Of(args[k.pos])] = true
		}
		slot, err := commandSlot(cmd, args)
		switch {
		case err != nil && len(slots) < 2:
			t.Fatalf("%s %q: %v with keys in %d slots", cmd.name, args[1:], err, len(slots))
		case err == nil && len(slots) > 1:
			t.Fatalf("%s %q: slot %d with keys in %d slots; want CROSSSLOT", cmd.name, args[1:], slot, len(slots))
		case err == nil && len(slots) == 0 && slot != -1:
			t.Fatalf("%s %q: slot %d without keys", cmd.name, args[1:], slot)
		case err == nil && len(slots) == 1 && !slots[slot]:
			t.Fatalf("%s %q: slot %d, not its key's", cmd.name, args[1:], slot)
		}
	})
}
