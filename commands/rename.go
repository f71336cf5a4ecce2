package commands

import (
	"fmt"
	"strings"
)

// rename-command, as in redis.conf: a command answered under another name,
// or hidden ("" as the new name), for this Handler only. The table is built
// once by New; without renames the global table serves, and the hot path
// pays one nil check on a lookup that misses the session's cache.

// Rename is one rename-command directive: From is answered as To, and no
// longer as From; To "" hides it.
type Rename struct{ From, To string }

// renamedTable returns the command table with the renames applied, nil if
// there are none. A renamed command is a copy of the original with the new
// name, so that its errors and the session's cache use the name clients
// send.
func renamedTable(renames []Rename) (map[string]*command, error) {
	if len(renames) == 0 {
		return nil, nil
	}
	table := make(map[string]*command, len(commandTable))
	for name, cmd := range commandTable {
		table[name] = cmd
	}
	for _, r := range renames {
		from, to := strings.ToLower(r.From), strings.ToLower(r.To)
		cmd := table[from]
		if cmd == nil {
			return nil, fmt.Errorf("commands: rename-command %s: no such command", r.From)
		}
		delete(table, from)
		if to == "" {
			continue
		}
		if table[to] != nil || len(to) > 24 || strings.ContainsAny(to, " \t\r\n") {
			return nil, fmt.Errorf("commands: rename-command %s %s: the new name is taken, too long (24 bytes) or has blanks", r.From, r.To)
		}
		renamed := *cmd
		renamed.name = to
		table[to] = &renamed
	}
	return table, nil
}

// lookupCommand is the package's lookupCommand over the Handler's table.
func (h *Handler) lookupCommand(name []byte) *command {
	if h.table == nil {
		return lookupCommand(name)
	}
	var buf [24]byte
	if len(name) > len(buf) {
		return nil
	}
	lower := buf[:len(name)]
	for i, b := range name {
		if b >= 'A' && b <= 'Z' {
			b += 'a' - 'A'
		}
		lower[i] = b
	}
	return h.table[string(lower)]
}
