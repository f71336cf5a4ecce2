package algorithms

// CellThrottle is the limiter of the redis-cell module's CL.THROTTLE (and
// Dragonfly's built-in of the same name): GCRA with emission interval
// Interval (period / count, rounded down to the nanosecond, as redis-cell
// computes it) and delay variation tolerance DVT = Interval × Limit, where
// Limit = max_burst + 1.
//
// redis-cell's GCRA is the token bucket's: a request of quantity q at now,
// with tat = max(TAT, now), is limited iff tat + q·Interval − DVT > now; it
// then retries after that difference (or never, when q·Interval > DVT);
// remaining is floor((DVT − ttl) / Interval) and reset_after is ttl, the
// new TAT − now (the old one when limited). So CellThrottle runs
// TokenBucket's arithmetic, saturating and clamped the same way; it is a
// separate algorithm so that a key of one kind is never read as the other.
// Units differ from redis-cell only below the microsecond: redis-cell
// divides microseconds as floats for remaining; this divides nanoseconds as
// integers.
//
// The zero value is not valid; the edge validates Interval ≥ 1, Limit ≥ 1
// and RefillFits(Limit, Interval).
type CellThrottle struct {
	Interval int64 // ns per unit: the emission interval
	Limit    int64 // max_burst + 1
}

// Take is TokenBucket.Take for a bucket of Limit units refilling one every
// Interval: quantity n > 0 takes, 0 peeks (redis-cell's quantity 0), and
// n < 0 refunds (CL.THROTTLE refuses negative quantities at the edge). The
// state is the TAT, as redis-cell stores it.
func (t CellThrottle) Take(s TokenState, now, n int64) (Result, TokenState) {
	return TokenBucket{Interval: t.Interval, Capacity: t.Limit}.Take(s, now, n)
}
