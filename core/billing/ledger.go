package billing

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"modelgateway/core/store"
)

// ErrInsufficient is insufficient_balance: the free balance cannot cover the hold.
var ErrInsufficient = errors.New("insufficient balance")

// Timings of the ledger; the contract bounds them: a charge shows in the balance within 2 s,
// an unused reservation returns to the pool within 5 s.
const (
	DefaultFlushEvery = 500 * time.Millisecond
	DefaultLeaseTTL   = 5 * time.Second
	DefaultIdle       = 2 * time.Second
	// leaseFactor: a lease grows by this many holds at once, so that a busy profile costs one
	// database transaction per several requests instead of one per request.
	leaseFactor = 8
)

// Ledger is one replica's view of money in flight. Holds are taken in memory against a lease
// on the profile's balance; finished requests are settled in batches. At any moment
// lease >= held + spent for every profile, and the database's leases of all replicas never
// exceed a balance, so replicas together never spend more than a profile has.
type Ledger struct {
	Store      *store.Store
	Replica    uuid.UUID
	FlushEvery time.Duration
	LeaseTTL   time.Duration
	Idle       time.Duration
	Log        *slog.Logger
	// OnSettle, when set, observes every settlement transaction (metrics).
	OnSettle func(batch int, took time.Duration, err error)

	mu       sync.Mutex
	accounts map[uuid.UUID]*account
	pending  []store.Settlement
	kick     chan struct{}
	flushMu  sync.Mutex // one settlement transaction at a time per replica
}

type account struct {
	mu sync.Mutex // serialises lease growth of one profile
	// guarded by Ledger.mu:
	lease   decimal.Decimal // reserved for this replica in the database
	held    decimal.Decimal // holds of requests in flight
	spent   decimal.Decimal // charged, not yet settled
	lastUse time.Time
}

// Hold is money reserved for one request.
type Hold struct {
	Profile uuid.UUID
	Amount  decimal.Decimal
	done    bool
}

// NewLedger makes a ledger for a replica with a fresh id.
func NewLedger(st *store.Store, log *slog.Logger) *Ledger {
	if log == nil {
		log = slog.Default()
	}
	return &Ledger{Store: st, Replica: uuid.New(), Log: log,
		FlushEvery: DefaultFlushEvery, LeaseTTL: DefaultLeaseTTL, Idle: DefaultIdle,
		accounts: map[uuid.UUID]*account{}, kick: make(chan struct{}, 1)}
}

func (l *Ledger) account(p uuid.UUID) *account {
	a := l.accounts[p]
	if a == nil {
		a = &account{}
		l.accounts[p] = a
	}
	a.lastUse = time.Now()
	return a
}

// Hold reserves amount for a request of the profile, growing the replica's lease when the
// part of it that is not held or spent is too small.
func (l *Ledger) Hold(ctx context.Context, profile uuid.UUID, amount decimal.Decimal) (*Hold, error) {
	l.mu.Lock()
	a := l.account(profile)
	if a.lease.Sub(a.held).Sub(a.spent).GreaterThanOrEqual(amount) {
		a.held = a.held.Add(amount)
		l.mu.Unlock()
		return &Hold{Profile: profile, Amount: amount}, nil
	}
	l.mu.Unlock()

	a.mu.Lock()
	defer a.mu.Unlock()
	l.mu.Lock()
	short := amount.Sub(a.lease.Sub(a.held).Sub(a.spent))
	if !short.IsPositive() { // another request grew the lease meanwhile
		a.held = a.held.Add(amount)
		l.mu.Unlock()
		return &Hold{Profile: profile, Amount: amount}, nil
	}
	l.mu.Unlock()
	// No settlement may run between reading the database's lease and adopting it: the memory
	// lease then equals the row exactly.
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	lease, err := l.Store.ExtendLease(ctx, profile, l.Replica, short, amount.Mul(decimal.NewFromInt(leaseFactor)), l.LeaseTTL)
	if errors.Is(err, store.ErrInsufficientBalance) {
		return nil, ErrInsufficient
	}
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	a.lease = lease
	if a.lease.Sub(a.held).Sub(a.spent).LessThan(amount) {
		return nil, ErrInsufficient
	}
	a.held = a.held.Add(amount)
	return &Hold{Profile: profile, Amount: amount}, nil
}

// Finish releases a hold and queues the request's record, with its charge when the record
// has a cost. It never blocks on the database.
func (l *Ledger) Finish(h *Hold, rec store.RequestRecord) {
	l.mu.Lock()
	if h != nil && !h.done {
		h.done = true
		a := l.account(h.Profile)
		a.held = a.held.Sub(h.Amount)
	}
	// Every queued charge is spent until settled, hold or not (a realtime response is charged
	// after its session's reserve has been used up): Flush subtracts each one again.
	if rec.Cost.Valid {
		a := l.account(rec.ProfileID)
		a.spent = a.spent.Add(rec.Cost.Decimal)
	}
	l.pending = append(l.pending, store.Settlement{Record: rec})
	l.mu.Unlock()
}

// Run settles pending requests every FlushEvery, renews the leases in use and returns idle
// ones, until ctx ends. Close does the last settlement.
func (l *Ledger) Run(ctx context.Context) {
	t := time.NewTicker(l.FlushEvery)
	defer t.Stop()
	renew := time.NewTicker(l.LeaseTTL / 5)
	defer renew.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := l.Flush(ctx); err != nil && ctx.Err() == nil {
				l.Log.Error("settle charges", "err", err)
			}
		case <-renew.C:
			if err := l.maintainLeases(ctx); err != nil && ctx.Err() == nil {
				l.Log.Error("maintain leases", "err", err)
			}
		}
	}
}

// Flush settles everything pending in one transaction. On failure the batch stays pending and
// is retried: ledger entries are unique per request, so a retry never charges twice.
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
	start := time.Now()
	err := l.Store.Settle(ctx, l.Replica, batch)
	l.settled(len(batch), start, err)
	if err != nil {
		l.mu.Lock()
		l.pending = append(batch, l.pending...)
		l.mu.Unlock()
		return err
	}
	l.mu.Lock()
	for _, s := range batch {
		if s.Record.Cost.Valid {
			a := l.account(s.Record.ProfileID)
			a.spent = a.spent.Sub(s.Record.Cost.Decimal)
			a.lease = decimal.Max(a.lease.Sub(s.Record.Cost.Decimal), decimal.Zero)
		}
	}
	l.mu.Unlock()
	return nil
}

// maintainLeases renews the leases of profiles in use and returns those idle for longer than
// Idle with nothing held or unsettled.
func (l *Ledger) maintainLeases(ctx context.Context) error {
	// Holding flushMu keeps a lease from being returned while a Hold is growing it again.
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	now := time.Now()
	var live, idle []uuid.UUID
	l.mu.Lock()
	for p, a := range l.accounts {
		if a.held.IsZero() && a.spent.IsZero() && now.Sub(a.lastUse) > l.Idle {
			idle = append(idle, p)
			delete(l.accounts, p)
			continue
		}
		if a.lease.IsPositive() {
			live = append(live, p)
		}
	}
	l.mu.Unlock()
	for _, p := range idle {
		if err := l.Store.ReleaseLease(ctx, p, l.Replica); err != nil {
			return err
		}
	}
	if len(live) > 0 {
		return l.Store.RenewLeases(ctx, l.Replica, live, l.LeaseTTL)
	}
	return nil
}

// Close settles what is pending and returns every lease; call it after the servers have
// drained, before the process exits, so that no delivered response goes uncharged.
func (l *Ledger) Close(ctx context.Context) error {
	err := l.Flush(ctx)
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	var all []uuid.UUID
	for p := range l.accounts {
		all = append(all, p)
	}
	l.accounts = map[uuid.UUID]*account{}
	l.mu.Unlock()
	for _, p := range all {
		err = errors.Join(err, l.Store.ReleaseLease(ctx, p, l.Replica))
	}
	return err
}
