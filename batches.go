package main

import (
	"context"
	"time"

	"modelgateway/core/batchrun"
)

// runBatches starts this replica's batch runner (contract.md "Files and batches"): items run
// through the replica's own front, GATEWAY_BATCH_CONCURRENCY at once (default 4, 0 for none).
func (w *wiring) runBatches(g *Gateway) {
	ctx, stop := context.WithCancel(context.Background())
	g.batchStop, g.batchDone = stop, make(chan struct{})
	n := w.cfg.BatchConcurrency
	if n < 0 {
		n = 0
	}
	count, err := g.tel.BatchMetrics(w.st.BatchQueueDepth)
	if err != nil {
		w.log.Warn("batch metrics are off", "err", err)
	}
	// Live requests first: no item starts while live request bodies hold more than half of
	// the replica's body budget (front.Limits), the memory a live request needs to be taken.
	budget := g.front.BodyBudget()
	yield := func() bool { return budget.Total > 0 && budget.Used() > budget.Total/2 }
	// And no item starts beside live requests arriving, but one at a time now and then.
	live := g.front.Live()
	prio := &batchrun.Priority{Live: func() (int64, time.Time) { return live.InFlight(), live.LastArrival() }}
	r := &batchrun.Runner{Store: w.st, Serve: g.front.ServeInternal, Concurrency: n, Lease: w.cfg.BatchLease,
		Log: w.log.With("component", "batches"), Counted: count, Yield: yield, Priority: prio}
	// The items' charges share commits (billing.Ledger.gatherBatch), and an item's slot frees
	// as soon as its charge is queued.
	g.ledger.SetBatchRunning(r.Active, r.ChargeQueued)
	go func() { defer close(g.batchDone); r.Run(ctx) }()
}
