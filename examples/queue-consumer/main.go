// Command queue-consumer is one of 16 consumers of a job queue that all call the same seller's
// API, which allows 100 calls a minute for all of them together. Instead of dropping jobs or
// hammering the seller with calls it will refuse, each consumer waits for its turn in a leaky
// bucket that sluice keeps: the calls leave at exactly the seller's rate, first come first
// served, and none starves. The pace keeps -headroom calls per period in reserve (default 1:
// 99 a minute for the seller's 100): the calls arrive at the seller a little late and unevenly
// (the network, timers), and the reserve keeps that jitter from ever bunching 101 calls into
// one of the seller's minutes.
//
//	go run ./examples/queue-consumer -addr 127.0.0.1:6380 -for 1m
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "queue-consumer:", err)
		os.Exit(1)
	}
}

// report is what the consumers did.
type report struct {
	calls  [][]time.Time // per consumer: when it called the seller
	limit  client.Rate   // the pace
	seller client.Rate   // the seller's limit
}

func run(ctx context.Context, args []string, out io.Writer) (*report, error) {
	fs := flag.NewFlagSet("queue-consumer", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:6380", "sluice's address")
	consumers := fs.Int("consumers", 16, "consumers sharing the seller's limit")
	count := fs.Int64("count", 100, "calls the seller allows per period, for all consumers together")
	per := fs.Duration("per", time.Minute, "the seller's period")
	headroom := fs.Int64("headroom", 1, "calls per period kept in reserve for arrival jitter")
	seller := fs.String("seller", "seller:acme", "the key of the seller's limit")
	runFor := fs.Duration("for", time.Minute, "how long to consume")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *headroom < 0 || *headroom >= *count {
		return nil, fmt.Errorf("-headroom %d must be at least 0 and below -count %d", *headroom, *count)
	}
	rdb := redis.NewClient(&redis.Options{Addr: *addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	defer rdb.Close()
	c := client.New(rdb)

	// One place in the queue per consumer, and one for the call being made: a consumer that
	// calls and asks again at once never finds the queue full, so none can be pushed out.
	limit := client.Leaky(*seller, client.Per(*count-*headroom, *per), int64(*consumers)+1)
	ctx, cancel := context.WithTimeout(ctx, *runFor)
	defer cancel()

	rep := &report{calls: make([][]time.Time, *consumers), limit: limit.Rate(), seller: client.Per(*count, *per)}
	var wg sync.WaitGroup
	errs := make(chan error, *consumers)
	for i := 0; i < *consumers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for job := 1; ; job++ {
				// Wait for this consumer's turn: it sleeps the delay sluice grants.
				if _, err := c.Wait(ctx, limit, 1); err != nil {
					// A call cut by the end of the run is the end, not a failure: go-redis's
					// socket deadline can fire an instant before ctx reports it.
					if end, _ := ctx.Deadline(); ctx.Err() == nil && time.Now().Before(end) {
						errs <- fmt.Errorf("consumer %d, job %d: %w", i, job, err)
					}
					return
				}
				rep.calls[i] = append(rep.calls[i], time.Now()) // callSeller(job) goes here
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return rep, err
	}
	rep.print(out, *runFor)
	return rep, nil
}

func (r *report) print(out io.Writer, d time.Duration) {
	total := 0
	for i, calls := range r.calls {
		fmt.Fprintf(out, "consumer %2d: %d calls\n", i, len(calls))
		total += len(calls)
	}
	fmt.Fprintf(out, "%d calls in %v, paced at %v for a seller's %v: %d in the busiest %v\n",
		total, d, r.limit, r.seller, r.busiest(), r.limit.Period())
}

// busiest returns the most calls made within any one of the seller's periods.
func (r *report) busiest() int {
	var all []time.Time
	for _, calls := range r.calls {
		all = append(all, calls...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Before(all[j]) })
	most := 0
	for i, j := 0, 0; j < len(all); j++ {
		for all[j].Sub(all[i]) >= r.limit.Period() {
			i++
		}
		most = max(most, j-i+1)
	}
	return most
}
