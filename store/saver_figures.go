package store

import (
	"time"

	"github.com/sluice-rl/sluice/internal/figure"
)

// saverReading is the saver's figures read at one moment.
type saverReading struct {
	SaverStats
	started time.Time
	now     time.Time
}

// saverFigures are the saver's figures beyond SaverStats's, for INFO
// persistence, in Redis's names.
var saverFigures = []figure.Row[*saverReading]{
	{Desc: figure.Desc{Name: "rdb_last_bgsave_time_sec", In: figure.Persistence},
		Read: func(r *saverReading) figure.Value {
			if r.Saves == 0 && r.LastTook == 0 {
				return figure.Int(-1) // no save yet, as Redis
			}
			return figure.Int(int64(r.LastTook.Round(time.Second) / time.Second))
		}},
	{Desc: figure.Desc{Name: "rdb_current_bgsave_time_sec", In: figure.Persistence},
		Read: func(r *saverReading) figure.Value {
			if !r.Running {
				return figure.Int(-1)
			}
			return figure.Int(int64(r.now.Sub(r.started) / time.Second))
		}},
}

// Figures returns the saver's figures now (the table above). Any
// goroutine; it reads the wall clock.
func (s *Saver) Figures() []figure.Figure {
	r := saverReading{SaverStats: s.Stats(), started: time.Unix(0, s.started.Load()), now: time.Now()}
	return figure.Read(saverFigures, &r)
}
