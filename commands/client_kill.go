package commands

import (
	"strings"
	"time"

	"github.com/sluice-rl/sluice/internal/parse"
)

// CLIENT KILL with Redis's filters, and CLIENT LIST's TYPE and ID
// filters. Every sluice connection is of type normal: it has no replicas,
// masters or Pub/Sub clients.

// clientFilter is the filters of one CLIENT KILL (all must match).
type clientFilter struct {
	ids         []int64
	addr, laddr string
	user        string
	typ         string // "": any; "normal" matches every sluice client
	maxAge      int64  // seconds; 0: any
	skipMe      bool
}

// clientTypes are the types Redis knows.
var clientTypes = []string{"normal", "master", "replica", "slave", "pubsub"}

// parseClientType returns typ lower case, or Redis's error.
func parseClientType(typ []byte) (string, error) {
	t := strings.ToLower(string(typ))
	for _, known := range clientTypes {
		if t == known {
			return t, nil
		}
	}
	return "", replyError(sanitize("Unknown client type '" + clip(string(typ), 128) + "'"))
}

// matches reports whether o passes f, at wall time now.
func (f *clientFilter) matches(self, o *session, now time.Time) bool {
	ci := o.conn.Info()
	switch {
	case f.skipMe && o == self:
		return false
	case len(f.ids) > 0 && !containsID(f.ids, ci.ID):
		return false
	case f.addr != "" && ci.Addr != f.addr:
		return false
	case f.laddr != "" && ci.LAddr != f.laddr:
		return false
	case f.typ != "" && f.typ != "normal":
		return false
	case f.maxAge > 0 && int64(now.Sub(ci.Created)/time.Second) < f.maxAge:
		return false
	}
	if f.user != "" {
		o.mu.Lock()
		name := o.user.Name()
		o.mu.Unlock()
		if name != f.user {
			return false
		}
	}
	return true
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// parseKillFilters reads CLIENT KILL's <filter> <value> pairs.
func parseKillFilters(args [][]byte) (clientFilter, error) {
	f := clientFilter{skipMe: true}
	if len(args)%2 != 0 {
		return f, errSyntax
	}
	for i := 0; i < len(args); i += 2 {
		name, v := args[i], args[i+1]
		switch {
		case equalFold(name, "id"):
			id, ok := parse.Int(v)
			if !ok || id <= 0 {
				return f, errClientID
			}
			f.ids = append(f.ids, id)
		case equalFold(name, "addr"):
			f.addr = string(v)
		case equalFold(name, "laddr"):
			f.laddr = string(v)
		case equalFold(name, "user"):
			f.user = string(v)
		case equalFold(name, "type"):
			t, err := parseClientType(v)
			if err != nil {
				return f, err
			}
			f.typ = t
		case equalFold(name, "skipme"):
			switch {
			case equalFold(v, "yes"):
				f.skipMe = true
			case equalFold(v, "no"):
				f.skipMe = false
			default:
				return f, errSyntax
			}
		case equalFold(name, "maxage"):
			n, ok := parse.Int(v)
			if !ok || n <= 0 {
				return f, errNotInteger
			}
			f.maxAge = n
		default:
			return f, errSyntax
		}
	}
	return f, nil
}

// clientKill: CLIENT KILL ip:port | CLIENT KILL <filter> <value> …
// The old form answers OK or "No such client" and may close the caller;
// the new one answers how many it closed, and skips the caller unless
// SKIPME no.
func (s *session) clientKill(args [][]byte) {
	old := len(args) == 1
	var f clientFilter
	if old {
		f = clientFilter{addr: string(args[0])}
	} else {
		var err error
		if f, err = parseKillFilters(args); err != nil {
			s.writeError(err)
			return
		}
	}
	// operation: the matching connections close once their batch in hand
	// is done; the caller's after this reply
	now := time.Now()
	var ids []int64
	s.h.conns(s, func(o *session) {
		if f.matches(s, o, now) {
			ids = append(ids, o.conn.ID())
		}
	})
	var killed int64
	for _, id := range ids {
		if id == s.conn.ID() {
			s.conn.CloseAfterReply()
			killed++
			continue
		}
		killed += s.h.kill(s, id)
	}
	if old {
		if killed == 0 {
			s.writeError(errNoSuchClient)
			return
		}
		s.writeOK()
		return
	}
	s.writeInt(killed)
}

// clientList: CLIENT LIST [TYPE type] [ID id [id …]]
func (s *session) clientList(args [][]byte) {
	var f clientFilter
	for i := 0; i < len(args); i++ {
		switch {
		case equalFold(args[i], "type") && i+1 < len(args):
			t, err := parseClientType(args[i+1])
			if err != nil {
				s.writeError(err)
				return
			}
			f.typ = t
			i++
		case equalFold(args[i], "id") && i+1 < len(args):
			for i++; i < len(args); i++ {
				id, ok := parse.Int(args[i])
				if !ok || id <= 0 {
					s.writeError(errInvalidClientID)
					return
				}
				f.ids = append(f.ids, id)
			}
		default:
			s.writeError(errSyntax)
			return
		}
	}
	var b strings.Builder
	now := time.Now()
	s.h.conns(s, func(o *session) {
		if f.matches(s, o, now) {
			b.WriteString(o.describe(s))
		}
	})
	s.writeVerbatim(b.String())
}
