// Package batchrun runs batch items (contract.md "Files and batches") on every replica: it
// claims items from PostgreSQL, runs each as a request of its own through the replica's own
// HTTP front (so an item gets exactly the key checks, hold, translation, routing and charge a
// live request gets) and records its result. At most Concurrency items run at once here.
package batchrun

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"modelgateway/core/store"
)

// Defaults.
const (
	DefaultConcurrency = 4
	// DefaultLease is how long a claim lasts unless renewed: a replica renews its claims every
	// lease/3, so an item whose replica died is claimed again within about a lease.
	DefaultLease = 30 * time.Second
	// idlePoll is how soon a runner looks for work again after a claim found none;
	// idlePollMax is how far that wait grows while claims keep finding none (a new batch
	// starts within about a second on an idle replica; each look is a statement).
	idlePoll    = 500 * time.Millisecond
	idlePollMax = time.Second
	// expireEvery is how often the expiry sweep runs: a window of hours needs no
	// sub-second sweep, and the items a runner holds see their window's end by themselves
	// (statusFresh).
	expireEvery = 5 * time.Second
	// purgeEvery is how often deleted and expired files (and the items of batches whose
	// results expired) are removed; purgeBatch bounds one round.
	purgeEvery = time.Minute
	purgeBatch = 1000
)

// ServeFunc serves one item as a request the gateway makes itself, under the request id
// given (front.Server.ServeInternal in the binary).
type ServeFunc func(w http.ResponseWriter, r *http.Request, requestID string)

// Outcome labels of gateway_batch_items_total.
const (
	OutcomeSucceeded = "succeeded" // an upstream answer with a 2xx status
	OutcomeAnswered  = "answered"  // an upstream answer of another status
	OutcomeRefused   = "refused"   // the gateway refused the item (error file)
	OutcomeLost      = "lost"      // charged by an attempt whose replica died before recording it
)

// Runner claims and runs items.
type Runner struct {
	Store       *store.Store
	Serve       ServeFunc
	Concurrency int
	Lease       time.Duration
	// Yield, when set, says that live requests are waiting: no new item starts meanwhile.
	Yield func() bool
	// Priority, when set, holds items back while live requests come (priority.go).
	Priority *Priority
	// Counted hears each finished item's outcome (metrics); nil: none.
	Counted func(outcome string)
	Log     *slog.Logger

	mu     sync.Mutex
	claims map[string]bool // request ids of the attempts claimed here: held or running
	// frees are the slot releases of the items running, by request id (ChargeQueued).
	frees   map[string]func()
	active  atomic.Int64 // items holding a slot: started, their charge not yet queued
	results chan result
	// freed wakes the pump when a slot frees before its item's result comes.
	freed chan struct{}
}

// result is an item's end, waiting to be recorded. abandon: nothing to record (the item was
// put back, or its claim is left to lapse).
type result struct {
	item    store.FinishedItem
	outcome string
	abandon bool
}

// The database work of a replica's items is done in rounds, one transaction each
// (store.BatchRound): the results waiting are recorded, the items the runner holds unstarted
// are refilled, and the batches of those items are checked for a cancel or the end of their
// window. An item's slot is free as soon as its answer is complete and its charge queued
// for the ledger's group commit (ChargeQueued), so that the next item runs while the charge
// waits for its siblings' (billing.Ledger.gatherBatch): at 4 items at once a commit then
// takes the charges of about a window's items rather than of the 4 running. The item's
// result still waits for its request to end, charge committed or failed, and then for the
// next round: an item is run again only when no result of it was recorded, and then only if
// its charge did not commit (runItem).
const (
	// claimAhead is how many items a round claims per slot: a runner holds up to that many
	// unstarted, so that claims are rare, and claims again when fewer than Concurrency are
	// left.
	claimAhead = 16
	// maxHeld bounds what one replica holds unstarted, whatever its concurrency.
	maxHeld = 256
	// maxResults is the most results a round records; a round starts as soon as that many
	// wait.
	maxResults = 64
	// resultLinger is the longest a result waits for a round. It is also the longest a
	// killed replica's finished items can go unrecorded (their answers are then lost, their
	// charges are not repeated: result_lost).
	resultLinger = 100 * time.Millisecond
	// statusFresh is how recent the check of a held item's batch must be for the item to
	// start: a cancel (or the window's end) reaches the items held here within about that.
	statusFresh = 200 * time.Millisecond
	// pumpTick is how often the runner looks at its state when nothing else wakes it.
	pumpTick = 10 * time.Millisecond
)

// Active is the number of items running on this replica now whose charge is not yet
// queued: the charges that may still join a group commit of batch charges.
func (r *Runner) Active() int64 { return r.active.Load() }

// ChargeQueued hears that the request of an item (its request id) has queued its charge:
// its answer is complete, and its slot frees for the next item while the charge commits.
// Other request ids are ignored.
func (r *Runner) ChargeQueued(requestID string) {
	r.mu.Lock()
	free := r.frees[requestID]
	r.mu.Unlock()
	if free != nil {
		free()
	}
}

// Run claims and runs items until ctx ends, then waits for the items running, records their
// results and puts back the items it held unstarted.
func (r *Runner) Run(ctx context.Context) {
	n := r.Concurrency
	if n <= 0 {
		return
	}
	if r.Lease <= 0 {
		r.Lease = DefaultLease
	}
	if r.Log == nil {
		r.Log = slog.Default()
	}
	r.claims, r.frees = map[string]bool{}, map[string]func(){}
	r.results, r.freed = make(chan result, n), make(chan struct{}, 1)
	go r.renew(ctx)
	p := &pump{r: r, n: n, target: min(claimAhead*n, maxHeld)}
	p.run(ctx)
}

// pump owns a runner's held items and waiting results; only its goroutine touches them.
type pump struct {
	r       *Runner
	n       int // concurrency
	target  int // items held after a claim
	held    []*store.ClaimedItem
	waiting []store.FinishedItem
	// outcomes are the metric outcomes of waiting, by position.
	outcomes []string
	oldest   time.Time // when the oldest waiting result came
	// inflight counts the items started whose result has not come; those of them whose
	// charge is not yet queued hold the slots (Runner.active).
	inflight int
	checked  time.Time // when the held items' batches were last checked
	started  time.Time // when the last item started (Priority)
	// idleUntil: a claim found nothing; the next waits until then. idleWait is that wait,
	// growing from idlePoll to idlePollMax while claims find nothing.
	idleUntil time.Time
	idleWait  time.Duration
	failures  int
	sweep     time.Time
	purge     time.Time
}

func (p *pump) run(ctx context.Context) {
	r := p.r
	tick := time.NewTicker(pumpTick)
	defer tick.Stop()
	p.sweep, p.purge = time.Now(), time.Now()
	for {
		stopping := ctx.Err() != nil
		if !stopping {
			p.maintain(ctx)
		}
		p.start(ctx, stopping)
		if p.roundDue(stopping) {
			p.round(stopping)
		}
		if stopping && p.inflight == 0 && len(p.waiting) == 0 {
			p.release()
			return
		}
		done := ctx.Done()
		if stopping {
			done = nil
		}
		select {
		case res := <-r.results:
			p.take(res)
		case <-r.freed:
		case <-tick.C:
		case <-done:
		}
	}
}

// maintain runs the expiry sweep and the purge of old files when they are due.
func (p *pump) maintain(ctx context.Context) {
	r := p.r
	if time.Since(p.sweep) >= expireEvery {
		p.sweep = time.Now()
		if _, err := r.Store.ExpireBatches(ctx); err != nil && ctx.Err() == nil {
			r.Log.Warn("expiring batches failed", "err", err)
		}
	}
	if time.Since(p.purge) >= purgeEvery {
		p.purge = time.Now()
		if _, err := r.Store.PurgeBatchFiles(ctx, purgeBatch); err != nil && ctx.Err() == nil {
			r.Log.Warn("purging batch files failed", "err", err)
		}
	}
}

// take counts a finished item's end: its slot is free (runItem's goroutine freed it), its
// result waits for a round.
func (p *pump) take(res result) {
	p.inflight--
	if res.abandon {
		p.r.mu.Lock()
		delete(p.r.claims, res.item.Item.RequestID)
		p.r.mu.Unlock()
		return
	}
	p.wait(res)
}

// wait queues a result for the next round.
func (p *pump) wait(res result) {
	if len(p.waiting) == 0 {
		p.oldest = time.Now()
	}
	p.waiting = append(p.waiting, res.item)
	p.outcomes = append(p.outcomes, res.outcome)
}

// start runs held items in the free slots, while their batches' check is fresh and no live
// request waits.
func (p *pump) start(ctx context.Context, stopping bool) {
	r := p.r
	for !stopping && r.active.Load() < int64(p.n) && len(p.held) > 0 && time.Since(p.checked) < statusFresh {
		if r.Yield != nil && r.Yield() {
			return
		}
		now := time.Now()
		if !r.Priority.allow(now, p.started) {
			return
		}
		p.started = now
		it := p.held[0]
		p.held = p.held[1:]
		p.inflight++
		r.active.Add(1)
		var once sync.Once
		free := func() {
			once.Do(func() {
				r.active.Add(-1)
				select {
				case r.freed <- struct{}{}:
				default:
				}
			})
		}
		r.mu.Lock()
		r.frees[it.RequestID] = free
		r.mu.Unlock()
		go func() {
			// An item runs to its end even when the replica stops: its charge and its
			// result belong together.
			res := r.runItem(context.WithoutCancel(ctx), it)
			r.mu.Lock()
			delete(r.frees, it.RequestID)
			r.mu.Unlock()
			free()
			r.results <- res
		}()
	}
}

// roundDue says whether a round is needed now: results have waited long enough (or enough
// of them wait), the held items run low, or the held items' check is stale while slots are
// free.
func (p *pump) roundDue(stopping bool) bool {
	switch {
	case len(p.waiting) >= maxResults || (len(p.waiting) > 0 && (stopping || time.Since(p.oldest) >= resultLinger)):
		return true
	case stopping:
		return false
	case p.wantClaim() > 0:
		return true
	}
	return len(p.held) > 0 && p.r.active.Load() < int64(p.n) && time.Since(p.checked) >= statusFresh
}

// wantClaim is how many items the next round should claim.
func (p *pump) wantClaim() int {
	r := p.r
	if len(p.held) >= p.n || time.Now().Before(p.idleUntil) || (r.Yield != nil && r.Yield()) {
		return 0
	}
	return p.target - len(p.held)
}

// round runs one store.BatchRound.
func (p *pump) round(stopping bool) {
	r := p.r
	claim := 0
	if !stopping {
		claim = p.wantClaim()
	}
	watch := map[string]bool{}
	for _, it := range p.held {
		watch[it.BatchID] = true
	}
	ids := make([]string, 0, len(watch))
	for id := range watch {
		ids = append(ids, id)
	}
	done := p.waiting
	if len(done) > maxResults {
		done = done[:maxResults]
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	claimed, stopped, err := r.Store.BatchRound(ctx, done, claim, r.Lease, ids)
	cancel()
	if err != nil {
		p.failures++
		r.Log.Warn("a batch round failed", "results", len(done), "err", err)
		if p.failures >= 5 && len(done) > 0 {
			// The claims of these items lapse and they are taken again: their charges, if
			// any, are found then.
			r.Log.Error("recording batch results failed; their items will be taken again", "results", len(done), "err", err)
			p.drop(len(done), false)
			p.failures = 0
		}
		time.Sleep(time.Duration(min(p.failures, 5)) * 200 * time.Millisecond)
		return
	}
	p.failures = 0
	p.drop(len(done), true)
	if claim > 0 && len(claimed) == 0 {
		p.idleWait = min(max(2*p.idleWait, idlePoll), idlePollMax)
		p.idleUntil = time.Now().Add(p.idleWait)
	} else if len(claimed) > 0 {
		p.idleWait = 0
	}
	if len(stopped) > 0 {
		kept := p.held[:0]
		for _, it := range p.held {
			if o := stopped[it.BatchID]; o != "" {
				p.wait(result{item: store.FinishedItem{Item: it, Result: &store.ItemResult{Outcome: o}}, outcome: o})
				continue
			}
			kept = append(kept, it)
		}
		p.held = kept
	}
	r.mu.Lock()
	for _, it := range claimed {
		r.claims[it.RequestID] = true
	}
	r.mu.Unlock()
	p.held = append(p.held, claimed...)
	p.checked = began
}

// drop forgets the first k waiting results: recorded (counted in the metrics), or given up.
func (p *pump) drop(k int, recorded bool) {
	r := p.r
	r.mu.Lock()
	for _, d := range p.waiting[:k] {
		delete(r.claims, d.Item.RequestID)
	}
	r.mu.Unlock()
	if recorded && r.Counted != nil {
		for _, o := range p.outcomes[:k] {
			r.Counted(o)
		}
	}
	p.waiting, p.outcomes = p.waiting[k:], p.outcomes[k:]
	if len(p.waiting) > 0 {
		p.oldest = time.Now()
	}
}

// release puts back the items held unstarted when the runner stops, so that another replica
// takes them at once rather than after the lease.
func (p *pump) release() {
	if len(p.held) == 0 {
		return
	}
	ids := make([]string, len(p.held))
	for i, it := range p.held {
		ids[i] = it.RequestID
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.r.Store.ReleaseBatchItems(ctx, ids); err != nil {
		p.r.Log.Warn("putting back held batch items failed; their claims lapse", "items", len(ids), "err", err)
	}
	p.held = nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// renew keeps this replica's claims alive (the items held and running), in one statement a
// tick.
func (r *Runner) renew(ctx context.Context) {
	t := time.NewTicker(r.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		ids := make([]string, 0, len(r.claims))
		for id := range r.claims {
			ids = append(ids, id)
		}
		r.mu.Unlock()
		if err := r.Store.RenewBatchItems(ctx, ids); err != nil && ctx.Err() == nil {
			r.Log.Warn("renewing batch claims failed", "err", err)
		}
	}
}
