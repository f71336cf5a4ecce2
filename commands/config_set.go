package commands

import (
	"errors"
	"strings"
)

// CONFIG SET and CONFIG REWRITE: the commands parse and answer; the
// process that owns the configuration (cmd/sluice) checks and applies the
// values through Settings, since most of them belong to other packages
// (the transport, the store, the logger, the saver).

// Settings are the running configuration: what CONFIG GET reads and what
// CONFIG SET and CONFIG REWRITE change. Safe for concurrent use.
type Settings interface {
	// Params returns every parameter with its value in force.
	Params() []Param
	// Set changes the parameters, all or none. Its errors are SettingError
	// (they become Redis's "CONFIG SET failed" reply) or reply errors.
	Set(pairs []Param) error
	// Rewrite writes the values in force into the config file the server
	// was started with.
	Rewrite() error
}

// SettingError refuses a CONFIG SET: Param names the argument, Reason says
// why, in Redis's words where it has them ("can't set immutable config").
// Unknown is true for a parameter that does not exist.
type SettingError struct {
	Param, Reason string
	Unknown       bool
}

func (e *SettingError) Error() string {
	if e.Unknown {
		return "Unknown option or number of arguments for CONFIG SET - '" + e.Param + "'"
	}
	return "CONFIG SET failed (possibly related to argument '" + e.Param + "') - " + e.Reason
}

// params returns the parameters CONFIG GET reads: the Settings' values in
// force, else those the Handler was given.
func (h *Handler) params() []Param {
	if st := h.cfg.Settings; st != nil {
		return st.Params()
	}
	return h.cfg.Params
}

// configSet: CONFIG SET parameter value [parameter value …]
func (s *session) configSet(args [][]byte) {
	if len(args) == 0 || len(args)%2 != 0 {
		s.writeError(errWrongArgs("config|set"))
		return
	}
	st := s.h.cfg.Settings
	if st == nil {
		s.writeError(errNoSettings)
		return
	}
	pairs := make([]Param, 0, len(args)/2)
	seen := map[string]bool{}
	for i := 0; i < len(args); i += 2 {
		name := strings.ToLower(string(args[i]))
		if seen[name] {
			s.writeError(replyError(clip((&SettingError{Param: name, Reason: "duplicate parameter"}).Error(), 512)))
			return
		}
		seen[name] = true
		pairs = append(pairs, Param{Name: name, Value: string(args[i+1])})
	}
	if err := st.Set(pairs); err != nil {
		s.writeSettingError(err)
		return
	}
	s.writeOK()
}

// configRewrite: CONFIG REWRITE
func (s *session) configRewrite() {
	st := s.h.cfg.Settings
	if st == nil {
		s.writeError(ErrNoConfigFile)
		return
	}
	if err := st.Rewrite(); err != nil {
		s.writeSettingError(err)
		return
	}
	s.writeOK()
}

// writeSettingError writes a Settings error: a SettingError or a reply
// error as it is, anything else as Redis words a failed rewrite.
func (s *session) writeSettingError(err error) {
	var se *SettingError
	var re replyError
	switch {
	case errors.As(err, &se):
		s.writeError(replyError(sanitize(clip(se.Error(), 512))))
	case errors.As(err, &re):
		s.writeError(re)
	default:
		s.writeError(replyError(sanitize(clip("Rewriting config file: "+err.Error(), 512))))
	}
}

// SetPassword changes requirepass, the default user's password ("":
// none, nopass): connections opened from now on must AUTH with it; those
// already authenticated stay so, as in Redis. Any goroutine.
func (h *Handler) SetPassword(p string) { h.acl.users.SetDefaultPassword(p) }

// SetSlowlog changes slowlog-log-slower-than (µs; negative: off) and
// slowlog-max-len (0 or more; the log is trimmed at its next entry). Any
// goroutine.
func (h *Handler) SetSlowlog(slowerThan, maxLen int64) {
	h.slowlog.slower.Store(slowerThan)
	h.slowlog.maxLen.Store(max(maxLen, 0))
}
