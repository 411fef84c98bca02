// Package batchrun runs batch items (contract.md "Files and batches") on every replica: it
// claims items from PostgreSQL, runs each as a request of its own through the replica's own
// HTTP front (so an item gets exactly the key checks, hold, translation, routing and charge a
// live request gets) and records its result. At most Concurrency items run at once here.
package batchrun

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"modelgateway/core/rpc"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// Defaults.
const (
	DefaultConcurrency = 4
	// DefaultLease is how long a claim lasts unless renewed: a replica renews its claims every
	// lease/3, so an item whose replica died is claimed again within about a lease.
	DefaultLease = 30 * time.Second
	// idlePoll is how often an idle runner looks for work (and the expiry sweep runs).
	idlePoll = 500 * time.Millisecond
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
	// Counted hears each finished item's outcome (metrics); nil: none.
	Counted func(outcome string)
	Log     *slog.Logger

	mu       sync.Mutex
	running  map[string]bool // request ids of the attempts running here
	active   atomic.Int64
	finishes chan finishReq
}

// finishReq is an item's result waiting to be recorded; done hears how that went.
type finishReq struct {
	item store.FinishedItem
	done chan error
}

// Grouping of results: the committer writes the results that are waiting, up to maxGroup,
// in one transaction, lingering up to groupLinger for more after the first.
const (
	maxGroup    = 64
	groupLinger = 2 * time.Millisecond
)

// commit records results in groups until finishes closes.
func (r *Runner) commit() {
	for first := range r.finishes {
		group := []finishReq{first}
		linger := time.NewTimer(groupLinger)
	collect:
		for len(group) < maxGroup {
			select {
			case f, ok := <-r.finishes:
				if !ok {
					break collect
				}
				group = append(group, f)
			case <-linger.C:
				break collect
			}
		}
		linger.Stop()
		items := make([]store.FinishedItem, len(group))
		for i, f := range group {
			items[i] = f.item
		}
		var err error
		for attempt := range 5 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err = r.Store.FinishBatchItems(ctx, items)
			cancel()
			if err == nil {
				break
			}
			time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
		}
		for _, f := range group {
			f.done <- err
		}
	}
}

// Active is the number of items running on this replica now.
func (r *Runner) Active() int64 { return r.active.Load() }

// Run claims and runs items until ctx ends, then waits for the items running.
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
	r.running = map[string]bool{}
	r.finishes = make(chan finishReq)
	committed := make(chan struct{})
	go func() { defer close(committed); r.commit() }()
	slots := make(chan struct{}, n)
	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		close(r.finishes)
		<-committed
	}()
	go r.renew(ctx)
	sweep, purge := time.Now(), time.Now()
	for ctx.Err() == nil {
		if time.Since(sweep) >= idlePoll {
			sweep = time.Now()
			if _, err := r.Store.ExpireBatches(ctx); err != nil && ctx.Err() == nil {
				r.Log.Warn("expiring batches failed", "err", err)
			}
		}
		if time.Since(purge) >= purgeEvery {
			purge = time.Now()
			if _, err := r.Store.PurgeBatchFiles(ctx, purgeBatch); err != nil && ctx.Err() == nil {
				r.Log.Warn("purging batch files failed", "err", err)
			}
		}
		free := n - len(slots)
		// Claims come in groups: while items run, a claim waits until half the slots are
		// free, so one claiming transaction serves several items.
		if free == 0 || (free < n && free < (n+1)/2) || (r.Yield != nil && r.Yield()) {
			sleep(ctx, 20*time.Millisecond)
			continue
		}
		items, err := r.Store.ClaimBatchItems(ctx, free, r.Lease)
		if err != nil {
			if ctx.Err() == nil {
				r.Log.Warn("claiming batch items failed", "err", err)
			}
			sleep(ctx, idlePoll)
			continue
		}
		if len(items) == 0 {
			sleep(ctx, idlePoll)
			continue
		}
		for _, it := range items {
			slots <- struct{}{}
			wg.Add(1)
			r.track(it.RequestID, true)
			go func() {
				defer func() { r.track(it.RequestID, false); <-slots; wg.Done() }()
				// An item runs to its end even when the replica stops: its charge and its
				// result belong together.
				r.runItem(context.WithoutCancel(ctx), it)
			}()
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (r *Runner) track(id string, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if on {
		r.running[id] = true
		r.active.Add(1)
	} else {
		delete(r.running, id)
		r.active.Add(-1)
	}
}

// renew keeps this replica's claims alive.
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
		ids := make([]string, 0, len(r.running))
		for id := range r.running {
			ids = append(ids, id)
		}
		r.mu.Unlock()
		if err := r.Store.RenewBatchItems(ctx, ids); err != nil && ctx.Err() == nil {
			r.Log.Warn("renewing batch claims failed", "err", err)
		}
	}
}

// runItem runs one attempt of an item and records its result.
func (r *Runner) runItem(ctx context.Context, it *store.ClaimedItem) {
	var res *store.ItemResult
	outcome := ""
	if it.PreviousRequestID != "" {
		// An earlier attempt's replica died. If that attempt's charge committed, running the
		// item again would charge it twice: it ends with what is known of it instead.
		charged, err := r.Store.RequestCharged(ctx, it.ProfileID, it.PreviousRequestID)
		if err != nil {
			r.Log.Warn("checking a batch item's earlier attempt failed", "batch", it.BatchID, "item", it.Idx, "err", err)
			return // the claim lapses and the item is tried again
		}
		if charged {
			res = &store.ItemResult{Outcome: store.OutcomeError, ErrorCode: "result_lost",
				ErrorText: "the request ran and was charged (request id " + it.PreviousRequestID + "), but the replica running it stopped before recording its answer"}
			outcome = OutcomeLost
		}
	}
	if res == nil && it.Stopped != "" {
		// Its batch was cancelled or ran out of time meanwhile, and its earlier attempt
		// charged nothing: it ends as its unstarted siblings did.
		res, outcome = &store.ItemResult{Outcome: it.Stopped}, it.Stopped
	}
	if res == nil {
		var retry bool
		res, outcome, retry = r.serve(ctx, it)
		if retry {
			sleep(ctx, time.Second) // a key limit: the item comes back after a pause
			if err := r.Store.ReleaseBatchItem(ctx, it); err != nil {
				r.Log.Warn("releasing a batch item failed", "err", err)
			}
			return
		}
	}
	done := make(chan error, 1)
	r.finishes <- finishReq{item: store.FinishedItem{Item: it, Result: res}, done: done}
	if err := <-done; err != nil {
		// The claim lapses and the item is taken again: its charge, if any, is found then.
		r.Log.Error("recording a batch item's result failed", "batch", it.BatchID, "item", it.Idx, "request_id", it.RequestID, "err", err)
		return
	}
	if r.Counted != nil {
		r.Counted(outcome)
	}
}

// path is the route an item runs on.
func path(it *store.ClaimedItem) string {
	if it.API == "anthropic" {
		return "/v1/messages"
	}
	return it.Endpoint
}

// serve runs the item through the front. retry: the gateway asked it to come back later
// (rate_limited), and the item goes back unstarted.
func (r *Runner) serve(ctx context.Context, it *store.ClaimedItem) (res *store.ItemResult, outcome string, retry bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, path(it), bytes.NewReader(it.Body))
	if err != nil {
		return &store.ItemResult{Outcome: store.OutcomeError, ErrorCode: apierror.Internal, ErrorText: err.Error()}, OutcomeRefused, false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+rpc.BatchCredential(it.KeyID))
	if it.API == "anthropic" {
		req.Header.Set("Anthropic-Version", "2023-06-01")
	}
	req.RemoteAddr = "127.0.0.1:0"
	rec := httptest.NewRecorder()
	r.Serve(rec, req, it.RequestID)
	status, body := rec.Code, rec.Body.Bytes()
	if status >= 200 && status < 300 {
		return &store.ItemResult{Outcome: store.OutcomeResponse, StatusCode: status, Response: body}, OutcomeSucceeded, false
	}
	code := gjson.GetBytes(body, "error.code").String()
	if code == "" {
		code = gjson.GetBytes(body, "error.type").String()
	}
	switch code {
	case apierror.RateLimited:
		return nil, "", true
	case apierror.UpstreamError:
		// The upstream answered: its answer is the item's response, whatever its status.
		return &store.ItemResult{Outcome: store.OutcomeResponse, StatusCode: status, Response: body}, OutcomeAnswered, false
	}
	if code == "" {
		code = apierror.Internal
	}
	return &store.ItemResult{Outcome: store.OutcomeError, ErrorCode: code, ErrorText: gjson.GetBytes(body, "error.message").String()}, OutcomeRefused, false
}
