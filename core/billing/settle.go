package billing

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"modelgateway/core/store"
	"modelgateway/core/wire/clock"
)

// Run settles pending records every FlushEvery, renews the leases in use, returns idle ones
// and finishes what dead replicas left behind, until ctx ends. Close does the last
// settlement.
func (l *Ledger) Run(ctx context.Context) {
	l.startOnce.Do(func() { go l.commitLoop() })
	t := time.NewTicker(l.FlushEvery)
	defer t.Stop()
	renew := time.NewTicker(l.LeaseTTL / 5)
	defer renew.Stop()
	var ticks int
	report := time.NewTicker(statsEvery)
	defer report.Stop()
	var reported int64
	// Report at once: until its first report the replica would count itself alone and
	// enforce whole limits (LiveReplicas).
	if err := l.reportAlive(ctx); err != nil && ctx.Err() == nil {
		l.Log.Warn("report alive", "err", err)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := l.Flush(ctx); err != nil && ctx.Err() == nil {
				l.Log.Error("settle records", "err", err, "pending", l.Pending())
			}
			l.mu.Lock()
			dropped := l.dropped
			l.dropped = 0
			l.mu.Unlock()
			if dropped > 0 {
				l.Log.Error("uncharged request records dropped: too many waiting for the database", "records", dropped)
			}
		case <-report.C:
			if st := l.Stats(); st.Charges != reported {
				reported = st.Charges
				l.Log.Info("charges committed", "charges", st.Charges, "commits", st.Commits,
					"wait_p50", st.WaitP50, "wait_p99", st.WaitP99, "tx_p50", st.TxP50, "tx_p99", st.TxP99)
			}
		case <-renew.C:
			if err := l.maintainLeases(ctx); err != nil && ctx.Err() == nil {
				l.Log.Error("maintain leases", "err", err)
			}
			if ticks++; ticks%5 == 0 {
				l.sweep(ctx)
			}
		}
	}
}

// reportAlive records that the replica is alive and learns how many are (LiveReplicas).
func (l *Ledger) reportAlive(ctx context.Context) error {
	n, err := l.Store.ReportAlive(ctx, l.Replica, l.LeaseTTL)
	if err == nil {
		l.live.Store(int32(n))
	}
	return err
}

// LiveReplicas is the number of replicas that reported within the last LeaseTTL when this
// one last reported (every LeaseTTL/5), itself included; 0 before its first report. A
// replica that stops says so at once (Close); one killed drops out of the count within
// LeaseTTL plus a report interval.
func (l *Ledger) LiveReplicas() int { return int(l.live.Load()) }

// statsEvery is how often a busy ledger logs its cumulative commit statistics.
const statsEvery = 10 * time.Second

func (l *Ledger) sweep(ctx context.Context) {
	dctx, cancel := l.dbContext(ctx)
	defer cancel()
	n, err := l.Store.SweepAbandoned(dctx, l.AbandonAfter)
	if err != nil {
		l.Log.Warn("sweep abandoned records", "err", err)
	} else if n > 0 {
		l.Log.Warn("request records of a replica that stopped marked abandoned", "records", n)
	}
}

// Flush settles the pending records in one transaction. When the database is unreachable
// they stay pending; when it refuses the batch for its data, each record is tried alone, and
// one refused maxTries times is set aside with a log line, so that no record holds up others.
func (l *Ledger) Flush(ctx context.Context) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	batch := l.pending
	l.pending = nil
	l.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	err := l.settle(ctx, batch)
	if err == nil || store.Unavailable(err) || len(batch) == 1 {
		return l.afterSettle(batch, err)
	}
	for _, q := range batch {
		if e := l.afterSettle([]*queued{q}, l.settle(ctx, []*queued{q})); e != nil && store.Unavailable(e) {
			err = e
		}
	}
	if store.Unavailable(err) {
		return err
	}
	return nil
}

func (l *Ledger) settle(ctx context.Context, batch []*queued) error {
	sts := make([]store.Settlement, len(batch))
	for i, q := range batch {
		sts[i] = store.Settlement{Record: q.rec}
	}
	dctx, cancel := l.dbContext(ctx)
	defer cancel()
	started := time.Now()
	res, err := l.Store.Settle(dctx, l.Replica, sts)
	l.settled(len(batch), time.Since(started), err)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, q := range batch {
		if q.rec.Cost.Valid {
			a := l.account(q.rec.ProfileID)
			a.spent = a.spent.sub(amountOf(q.rec.Cost.Decimal))
			if q.budget != nil {
				b := l.budgetAccountOf(q.budget.ref)
				b.spent = b.spent.sub(amountOf(q.rec.Cost.Decimal))
			}
			if res.Capped[i] {
				l.Log.Warn("charge capped at the free balance", "profile", q.rec.ProfileID, "request_id", q.rec.RequestID,
					"cost", q.rec.Cost.Decimal, "charged", res.Charged[i].Decimal)
			}
		}
	}
	l.adoptAll(res)
	return nil
}

// afterSettle puts a failed batch back, or sets aside a record refused too often.
func (l *Ledger) afterSettle(batch []*queued, err error) error {
	if err == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var back []*queued
	for _, q := range batch {
		if !store.Unavailable(err) {
			q.tries++
			if q.tries >= maxTries {
				l.Log.Error("request record set aside after repeated settlement failures", "profile", q.rec.ProfileID,
					"request_id", q.rec.RequestID, "status", q.rec.Status, "cost", q.rec.Cost.Decimal, "tries", q.tries, "err", err)
				if q.rec.Cost.Valid {
					a := l.account(q.rec.ProfileID)
					a.spent = a.spent.sub(amountOf(q.rec.Cost.Decimal))
					if q.budget != nil {
						b := l.budgetAccountOf(q.budget.ref)
						b.spent = b.spent.sub(amountOf(q.rec.Cost.Decimal))
					}
				}
				continue
			}
		}
		back = append(back, q)
	}
	l.pending = append(back, l.pending...)
	return err
}

// maintainLeases reports the replica alive, renews the leases in use and returns those idle
// for longer than Idle with nothing held or unsettled. A lease the database no longer has
// alive is not used again until a growth has checked the free balance.
func (l *Ledger) maintainLeases(ctx context.Context) error {
	mono := clock.Mono()
	type idleLease struct {
		p       uuid.UUID
		version int64
	}
	var idle []idleLease
	var live []uuid.UUID
	seen := map[uuid.UUID]int64{}
	l.mu.Lock()
	for p, a := range l.accounts {
		if a.held.isZero() && a.spent.isZero() && a.growing == nil && time.Duration(mono-a.lastUse) > l.Idle {
			if a.version > 0 {
				idle = append(idle, idleLease{p, a.version})
			}
			delete(l.accounts, p)
			continue
		}
		if a.version > 0 && mono < a.deadline {
			live = append(live, p)
			seen[p] = a.version
		}
	}
	type idleBudget struct {
		ref     store.BudgetRef
		version int64
	}
	var idleBudgets []idleBudget
	var liveBudgets []store.BudgetRef
	seenBudget := map[store.BudgetRef]int64{}
	for r, a := range l.budgets {
		if a.held.isZero() && a.spent.isZero() && a.growing == nil && time.Duration(mono-a.lastUse) > l.Idle {
			if a.version > 0 {
				idleBudgets = append(idleBudgets, idleBudget{r, a.version})
			}
			delete(l.budgets, r)
			continue
		}
		if a.version > 0 && mono < a.deadline {
			liveBudgets = append(liveBudgets, r)
			seenBudget[r] = a.version
		}
	}
	l.mu.Unlock()
	dctx, cancel := l.dbContext(ctx)
	defer cancel()
	err := l.reportAlive(dctx)
	for _, i := range idle {
		err = errors.Join(err, l.Store.ReleaseLease(dctx, i.p, l.Replica, i.version))
	}
	for _, i := range idleBudgets {
		err = errors.Join(err, l.Store.ReleaseBudgetLease(dctx, i.ref, l.Replica, i.version))
	}
	if len(liveBudgets) > 0 {
		started := clock.Mono()
		renewed, rerr := l.Store.RenewBudgetLeases(dctx, l.Replica, liveBudgets, l.LeaseTTL)
		if rerr != nil {
			return errors.Join(err, rerr)
		}
		l.mu.Lock()
		for _, r := range liveBudgets {
			a := l.budgets[r]
			if a == nil {
				continue
			}
			if st, ok := renewed[r]; ok {
				if st.Version >= a.version {
					l.adopt(a, st, started+int64(l.LeaseTTL-l.margin()))
				}
			} else if a.version <= seenBudget[r] {
				a.deadline = 0
			}
		}
		l.mu.Unlock()
	}
	if len(live) == 0 {
		return err
	}
	started := clock.Mono()
	renewed, rerr := l.Store.RenewLeases(dctx, l.Replica, live, l.LeaseTTL)
	if rerr != nil {
		return errors.Join(err, rerr)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range live {
		a := l.accounts[p]
		if a == nil {
			continue
		}
		if st, ok := renewed[p]; ok {
			if st.Version >= a.version {
				l.adopt(a, st, started+int64(l.LeaseTTL-l.margin()))
			}
		} else if a.version <= seen[p] {
			a.deadline = 0 // expired in the database: grow (and check) again
		}
	}
	return err
}

// Close settles what is pending, retrying until ctx ends (a database that is down at
// shutdown may come back within the drain time), and returns every lease; call it after
// the servers have drained, before the process exits.
func (l *Ledger) Close(ctx context.Context) error {
	var err error
	for {
		err = l.Flush(ctx)
		if n := l.Pending(); err == nil && n == 0 {
			break
		}
		if ctx.Err() != nil {
			l.Log.Error("shutdown: request records left unsettled", "records", l.Pending(), "err", err)
			break
		}
		l.Log.Warn("settlement at shutdown failed; retrying", "records", l.Pending(), "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	refunded := make(chan struct{})
	go func() { l.refunds.Wait(); close(refunded) }()
	select {
	case <-refunded:
	case <-ctx.Done():
	}
	l.mu.Lock()
	if !l.closed {
		close(l.stopCommit)
	}
	l.closed = true
	l.mu.Unlock()
	l.startOnce.Do(func() { close(l.commitDone) })
	<-l.commitDone
	l.background.Wait() // no growth starts once closed; one under way ends within DBTimeout
	l.mu.Lock()
	leased := false
	for _, a := range l.accounts {
		leased = leased || a.version > 0
	}
	for _, a := range l.budgets {
		leased = leased || a.version > 0
	}
	l.accounts = map[uuid.UUID]*account{}
	l.budgets = map[store.BudgetRef]*account{}
	l.mu.Unlock()
	if ctx.Err() != nil {
		return err // the leases expire by themselves within LeaseTTL, the report grows old
	}
	dctx, cancel := l.dbContext(ctx)
	defer cancel()
	// The other replicas take over this one's share of the keys' limits at their next report.
	// Best effort: a report left behind (the database already gone) grows old within 5 s, so
	// failing to remove it is no failure of the shutdown.
	_ = l.Store.ForgetReplica(dctx, l.Replica)
	if !leased {
		return err
	}
	return errors.Join(err, l.Store.ReleaseAll(dctx, l.Replica))
}

// Refund gives back a committed charge whose answer's end did not reach the client (it went
// away between the commit and the last event): a cut answer is not charged. It runs in the
// background, retried for about half a minute; Close waits for it.
func (l *Ledger) Refund(profile uuid.UUID, requestID, status string) {
	l.refunds.Add(1)
	go func() {
		defer l.refunds.Done()
		var err error
		for try := range 10 {
			ctx, cancel := context.WithTimeout(context.Background(), l.DBTimeout)
			var back decimal.Decimal
			back, err = l.Store.Refund(ctx, profile, requestID, status)
			cancel()
			if err == nil {
				if back.IsPositive() {
					l.Log.Info("charge refunded: the answer did not reach the client", "profile", profile, "request_id", requestID, "amount", back)
				}
				return
			}
			time.Sleep(time.Duration(try+1) * 500 * time.Millisecond)
		}
		l.Log.Error("refund failed", "profile", profile, "request_id", requestID, "err", err)
	}()
}
