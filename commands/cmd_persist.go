package commands

// The persistence commands: SAVE, BGSAVE, LASTSAVE, with Redis's replies.

func init() {
	register(
		&command{name: "save", arity: 1, flags: flagAdmin, run: cmdSave, group: "server", since: "0.1.0",
			summary: "Writes the snapshot file now, blocking this client until it is written.", complexity: "O(N)"},
		&command{name: "bgsave", arity: -1, maxArgs: 2, flags: flagAdmin, run: cmdBgsave, group: "server", since: "0.1.0",
			summary: "Writes the snapshot file in the background.", complexity: "O(1); the save itself O(N)",
			arguments: []argDoc{{name: "schedule", typ: "pure-token", token: "SCHEDULE", optional: true}}},
		&command{name: "lastsave", arity: 1, flags: flagFast, run: cmdLastsave, group: "server", since: "0.1.0",
			summary: "Returns the unix time of the last successful save.", complexity: "O(1)"},
	)
}

// errNoPersistence answers SAVE and BGSAVE on a server started without a
// snapshot file.
const errNoPersistence Error = "ERR snapshots are not configured on this server"

func cmdSave(c *Client, args [][]byte) {
	p := c.srv.cfg.Persister
	if p == nil {
		c.writeError(errNoPersistence)
		return
	}
	if err := p.Save(); err != nil {
		c.writeError(err)
		return
	}
	c.writeOK()
}

// cmdBgsave: BGSAVE [SCHEDULE]. SCHEDULE is accepted and means the same:
// there is no rewrite to wait for; a save already running is an error.
func cmdBgsave(c *Client, args [][]byte) {
	if len(args) == 2 && !equalFold(args[1], "schedule") {
		c.writeError(errSyntax)
		return
	}
	p := c.srv.cfg.Persister
	if p == nil {
		c.writeError(errNoPersistence)
		return
	}
	if err := p.BackgroundSave(); err != nil {
		c.writeError(err)
		return
	}
	c.writeSimple("Background saving started")
}

func cmdLastsave(c *Client, args [][]byte) {
	p := c.srv.cfg.Persister
	if p == nil {
		c.writeInt(c.srv.start.Unix())
		return
	}
	c.writeInt(p.LastSave())
}
