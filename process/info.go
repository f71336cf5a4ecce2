package process

import (
	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/store"
)

// The store's persistence figures as the commands' INFO reports them (the
// key space's figures are the store's own table, store.KeyspaceFigures).

// persister is the commands' Persister for a single node's snapshot file.
type persister struct{ *store.Saver }

func (p persister) PersistenceStats() commands.PersistenceStats {
	s := p.Stats()
	return commands.PersistenceStats{
		BackgroundSaveRunning: s.Running,
		LastSave:              s.LastSave,
		LastSaveOK:            s.LastOK,
		LastSaveTook:          s.LastTook,
		Saves:                 s.Saves,
		Path:                  s.Path,
	}
}

// persisterOf returns saver as the commands' Persister, or a nil interface
// in a replicated group, where SAVE and BGSAVE are refused (RAFT.SNAPSHOT
// snapshots the state machine).
func persisterOf(saver *store.Saver) commands.Persister {
	if saver == nil {
		return nil
	}
	return persister{saver}
}
