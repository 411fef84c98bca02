package billing

// Group commit: the charges of answers finishing together share one transaction, written
// before any of those answers' ends reach their clients. It settles the charges in full
// (gateway_settle), not into a journal settled later: a journal cost the database more per
// request and shortened no wait, since at saturation an answer's end waits for the gateway's
// own busy core. One group commits at a time: a second beside it only waited on the first's
// profile locks. (The measurements are in the commit that shortened this comment.)

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"modelgateway/core/store"
	"modelgateway/core/wire/clock"
)

// Charge makes a finished request's record and charge durable, and then releases its hold.
// Charges arriving together share one transaction (group commit). It returns what was
// taken from the balance, the record's cost: an answer is charged in full or not delivered.
//
// A cost above the hold (usage beyond the estimate) is first covered by growing the hold,
// which takes only money no other request holds: the replica's lease less its other holds
// and unsettled charges, or a lease growth checked against the free balance. When that fails
// the error is ErrInsufficient, nothing was written and the hold is kept. When the
// database nonetheless takes less than the cost (ErrCapped: the lease had expired there, as
// after a partition, and another replica spent the money), the part taken is given back in
// the background with Refund (status refundStatus) and the hold is released.
//
// On any error the caller must not deliver the answer's end, and finishes the request with
// Finish (uncharged). The wait for the commit is bounded by DBTimeout (plus GroupWindow),
// whatever ctx does.
func (l *Ledger) Charge(ctx context.Context, h *Hold, rec store.RequestRecord, refundStatus string) (decimal.Decimal, error) {
	charged, _, err := l.charge(ctx, h, rec, refundStatus, false)
	return charged, err
}

// charge is Charge, which also returns the charged amount's text when the commit made it
// (charge.costText; empty otherwise); batch: the charge of a batch item, which may wait for
// the charges of the replica's other batch items to share its commit (gatherBatch).
func (l *Ledger) charge(ctx context.Context, h *Hold, rec store.RequestRecord, refundStatus string, batch bool) (decimal.Decimal, string, error) {
	l.startOnce.Do(func() { go l.commitLoop() })
	// Only the wait is read from the charge's times: monotonic readings, half a time.Now.
	start := clock.Mono()
	caller := h
	if rec.Cost.Valid {
		var err error
		if h, err = l.cover(ctx, h, rec.ProfileID, rec.Cost.Decimal); err != nil {
			return decimal.Zero, "", err
		}
	}
	// A hold made here for a caller that had none is not the caller's to release.
	own := func() {
		if caller == nil && h != nil {
			l.mu.Lock()
			l.release(h)
			l.mu.Unlock()
		}
	}
	c := newCharge()
	c.rec, c.hold, c.batch = rec, h, batch
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		own()
		c.free()
		return decimal.Zero, "", fmt.Errorf("%w: the ledger is closed", ErrUnavailable)
	}
	if l.SplitWaits {
		c.queued = clock.Mono()
	}
	l.charges = append(l.charges, c)
	queued := l.batchQueued
	l.mu.Unlock()
	if batch && queued != nil {
		// Before the committer wakes: the item no longer counts as running when it looks.
		queued(rec.RequestID)
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
	<-c.done
	now := clock.Mono()
	wait := time.Duration(now - start)
	l.mu.Lock()
	l.waits.add(wait)
	if l.SplitWaits {
		l.queues.add(time.Duration(c.txStart - c.queued))
		l.wakes.add(time.Duration(now - c.txEnd))
		l.covers.add(time.Duration(c.queued - start))
	}
	l.mu.Unlock()
	if l.OnCharge != nil {
		l.OnCharge(wait)
	}
	charged, text, capped, err := c.charged, c.costText, c.capped, c.err
	c.free()
	if err != nil {
		own()
	}
	if err == nil && capped {
		l.Refund(rec.ProfileID, rec.RequestID, refundStatus)
		return decimal.Zero, "", ErrCapped
	}
	if err != nil {
		return charged, "", err
	}
	return charged, text, nil
}

// charges recycles the charges: a charge is its waiter's alone again once done has woken it
// (the committer touches nothing of it after the send), and a charge and its channel were
// two allocations per request.
var charges = sync.Pool{New: func() any { return &charge{done: make(chan struct{}, 1)} }}

func newCharge() *charge { return charges.Get().(*charge) }

// free gives c back, cleared (its record names the request).
func (c *charge) free() {
	*c = charge{done: c.done}
	charges.Put(c)
}

// wake tells c's waiter that c is settled or failed: the last the committer does with c.
func (c *charge) wake() { c.done <- struct{}{} }

func (l *Ledger) commitLoop() {
	defer close(l.commitDone)
	last := 0
	for {
		select {
		case <-l.wake:
		case <-l.stopCommit:
			l.commit(l.takeCharges())
			return
		}
		if l.GroupWindow > 0 && last > 1 {
			l.gather()
		}
		l.gatherBatch()
		batch := l.takeCharges()
		last = len(batch)
		l.commit(batch)
		l.giveCharges(batch)
	}
}

// takeCharges takes the charges waiting for the committer.
func (l *Ledger) takeCharges() []*charge {
	l.mu.Lock()
	defer l.mu.Unlock()
	batch := l.charges
	l.charges, l.spareCharges = l.spareCharges, nil
	return batch
}

// giveCharges hands a committed group's slice back for a later group to gather in.
func (l *Ledger) giveCharges(batch []*charge) {
	clear(batch) // its charges went back to their pool
	l.mu.Lock()
	if l.spareCharges == nil {
		l.spareCharges = batch[:0]
	}
	l.mu.Unlock()
}

// groupTarget is the group size at which the committer stops waiting for more charges to
// join: under load the group fills before GroupWindow ends and commits at once.
const groupTarget = 16

// gather waits up to GroupWindow for charges to join the group, and no longer once it has
// groupTarget of them (or the ledger is closing).
func (l *Ledger) gather() {
	t := time.NewTimer(l.GroupWindow)
	defer t.Stop()
	for {
		l.mu.Lock()
		n := len(l.charges)
		l.mu.Unlock()
		if n >= groupTarget {
			return
		}
		select {
		case <-l.wake:
		case <-t.C:
			return
		case <-l.stopCommit:
			return
		}
	}
}

// SetBatchRunning tells the ledger how many batch items run on the replica now with their
// charge still to come (core/batchrun's Runner.Active), for gatherBatch, and whom to tell
// when a batch item's charge is queued (Runner.ChargeQueued, which frees the item's slot for
// the next item; queued may be nil).
func (l *Ledger) SetBatchRunning(running func() int64, queued func(requestID string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.batchRunning, l.batchQueued = running, queued
}

// batchGroupTarget is the group size at which a group of batch charges stops waiting.
const batchGroupTarget = 64

// gatherBatch lets a group made only of batch items' charges wait, up to BatchWindow and
// batchGroupTarget charges, while batch items still run on the replica with their charges to
// come: a replica's items then share one commit rather than committing one or two at a time
// (with 4 items at once, 0.5 commits an item became 0.25 when a group waited for the 4
// running; with an item's slot freed as soon as its charge is queued, a group takes the
// charges of every item that finishes within the window). When no item is left running the
// group commits at once. A live request's charge ends the wait at once: live requests never
// wait for batch items.
func (l *Ledger) gatherBatch() {
	window := l.BatchWindow
	if window == 0 {
		window = DefaultBatchWindow
	}
	if window < 0 {
		return
	}
	var t *time.Timer
	for {
		l.mu.Lock()
		n, live, running := len(l.charges), false, l.batchRunning
		for _, c := range l.charges {
			live = live || !c.batch
		}
		l.mu.Unlock()
		if n == 0 || live || n >= batchGroupTarget || running == nil || running() <= 0 {
			return
		}
		if t == nil {
			t = time.NewTimer(window)
			defer t.Stop()
		}
		select {
		case <-l.wake:
		case <-t.C:
			return
		case <-l.stopCommit:
			return
		}
	}
}

// commit settles a group of charges; when the database refuses the group for its data (not
// its connection), each charge is tried alone so that one bad record fails only its request.
func (l *Ledger) commit(batch []*charge) {
	if len(batch) == 0 {
		return
	}
	// The committer's slice when it is free and large enough (a record is some 300 bytes,
	// copied per commit into a new slice otherwise).
	sts := l.settlements
	l.settlements = nil
	if cap(sts) < len(batch) {
		sts = make([]store.Settlement, len(batch), max(len(batch), groupTarget))
	}
	sts = sts[:len(batch)]
	for i, c := range batch {
		sts[i] = store.Settlement{Record: c.rec}
	}
	costTexts(batch, sts)
	for i, c := range batch {
		c.costText = sts[i].CostText // (sts is cleared after the commit)
	}
	// Only the transaction's duration is read from these: monotonic readings.
	started := clock.Mono()
	ctx, cancel := context.WithTimeout(context.Background(), l.DBTimeout)
	res, err := l.Store.Settle(ctx, l.Replica, sts)
	cancel()
	clear(sts) // Settle keeps none of it; cleared, it keeps no record's strings alive
	l.settlements = sts[:0]
	ended := clock.Mono()
	took := time.Duration(ended - started)
	l.settled(len(batch), took, err)
	for _, c := range batch {
		c.txStart, c.txEnd = started, ended
	}
	l.mu.Lock()
	l.txs.add(took)
	l.stats.Commits++
	if err == nil {
		l.stats.Charges += int64(len(batch))
		for i, c := range batch {
			l.release(c.hold)
			c.charged, c.capped = res.Charged[i].Decimal, res.Capped[i]
			if c.capped || !res.Charged[i].Valid || !c.rec.Cost.Valid || !c.charged.Equal(c.rec.Cost.Decimal) {
				c.costText = "" // the text is of the cost, not of what was charged
			}
			if c.capped {
				l.Log.Warn("charge capped at the free balance; the answer is withheld and the charge given back", "profile", c.rec.ProfileID,
					"request_id", c.rec.RequestID, "cost", c.rec.Cost.Decimal, "charged", c.charged)
			}
		}
		l.adoptAll(res)
	}
	l.mu.Unlock()
	if err == nil {
		for _, c := range batch {
			c.wake()
		}
		return
	}
	if !store.Unavailable(err) && len(batch) > 1 {
		for _, c := range batch {
			l.commit([]*charge{c})
		}
		return
	}
	if len(batch) == 1 && !store.Unavailable(err) {
		l.Log.Error("charge refused by the database; the answer is withheld", "profile", batch[0].rec.ProfileID,
			"request_id", batch[0].rec.RequestID, "err", err)
	} else {
		l.Log.Warn("charges not committed", "charges", len(batch), "err", err)
	}
	err = unavailable(err)
	for _, c := range batch {
		c.err = err
		c.wake()
	}
}

// costTexts gives the settlements of batch their costs' text (Settlement.CostText), all in one
// string: the statement takes the costs as text, and Decimal.String cost an allocation or
// two per charge (AppendDecimal writes the same text).
func costTexts(batch []*charge, sts []store.Settlement) {
	var ends [64]int // where each cost's text ends; a larger batch leaves the rest to Settle
	var buf []byte
	n := min(len(batch), len(ends))
	for i, c := range batch[:n] {
		if c.rec.Cost.Valid {
			buf = AppendDecimal(buf, c.rec.Cost.Decimal)
		}
		ends[i] = len(buf)
	}
	all, start := string(buf), 0
	for i := range n {
		if batch[i].rec.Cost.Valid {
			sts[i].CostText = all[start:ends[i]]
		}
		start = ends[i]
	}
}

// adoptAll takes the lease states a settlement returned; the caller holds l.mu.
func (l *Ledger) adoptAll(res *store.Settled) {
	for p, st := range res.Leases {
		if a := l.accounts[p]; a != nil {
			l.adopt(a, st, 0)
		}
	}
	for r, st := range res.BudgetLeases {
		if a := l.budgets[r]; a != nil {
			l.adopt(a, st, 0)
		}
	}
}
