package main

import (
	"context"
	"log/slog"
	"time"

	"modelgateway/core/batchrun"
	"modelgateway/core/billing"
	"modelgateway/core/store"
	"modelgateway/core/telemetry"
	"modelgateway/front"
)

// startBatches starts this replica's batch runner (contract.md "Files and batches"): items run
// through the replica's own front, concurrency at once (0 for none). stop ends its claims;
// done closes once the items running have recorded their results. It takes its parts rather
// than the wiring, so that the start-up that calls it is the only one that knows both.
func startBatches(st *store.Store, fr *front.Server, tel *telemetry.Telemetry, ledger *billing.Ledger,
	concurrency int, lease time.Duration, log *slog.Logger) (stop func(), done chan struct{}) {
	ctx, stop := context.WithCancel(context.Background())
	done = make(chan struct{})
	count, err := tel.BatchMetrics(st.BatchQueueDepth)
	if err != nil {
		log.Warn("batch metrics are off", "err", err)
	}
	// Live requests first: no item starts while live request bodies hold more than half of
	// the replica's body budget (front.Limits), the memory a live request needs to be taken.
	budget := fr.BodyBudget()
	yield := func() bool { return budget.Total > 0 && budget.Used() > budget.Total/2 }
	// And no item starts beside live requests arriving, but one at a time now and then.
	live := fr.Live()
	prio := &batchrun.Priority{Live: func() (int64, time.Time) { return live.InFlight(), live.LastArrival() }}
	r := &batchrun.Runner{Store: st, Serve: fr.ServeInternal, Concurrency: max(concurrency, 0), Lease: lease,
		Log: log.With("component", "batches"), Counted: count, Yield: yield, Priority: prio}
	// The items' charges share commits (billing.Ledger.gatherBatch), and an item's slot frees
	// as soon as its charge is queued.
	ledger.SetBatchRunning(r.Active, r.ChargeQueued)
	go func() { defer close(done); r.Run(ctx) }()
	return stop, done
}
