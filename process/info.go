package process

import (
	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/store"
)

// The store's figures as the commands' INFO reports them. The same store
// sits under a replicated node, so a replicated node reports its own
// replica's memory and expiry too.

// storeStats is the commands' StatsReporter for a store.
type storeStats struct{ st *store.Store }

func (r storeStats) KeyspaceStats() commands.KeyspaceStats {
	s := r.st.Stats()
	limit, policy := r.st.MaxMemory()
	sw := r.st.SweepTotals()
	return commands.KeyspaceStats{
		UsedMemory:    s.Used(),
		ArenaBytes:    s.ArenaBytes,
		IndexBytes:    s.IndexBytes,
		FreeBytes:     s.FreeBytes,
		Keys:          s.Keys,
		MaxMemory:     limit,
		Policy:        policy.String(),
		ExpiredKeys:   s.ExpiredKeys,
		EvictedKeys:   s.Evicted,
		RefusedKeys:   s.Refused,
		SweepExamined: s.SweepSteps,
		SweepRemoved:  s.SweepRemoved,
		SweepRuns:     sw.Runs,
		SweepRounds:   sw.Rounds,
		SweepTime:     sw.Time,
		SweepLast:     sw.Last,
		SweepMax:      sw.Most,
		Shards:        r.st.Shards(),
	}
}

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
