package billing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"modelgateway/core/store"
	"modelgateway/core/wire/clock"
)

// ErrInsufficient is insufficient_balance: the free balance cannot cover the hold.
var ErrInsufficient = errors.New("insufficient balance")

// ErrCapped is a charge the database took less of than its cost: the lease that covered its
// hold had expired there and the money had gone to another replica meanwhile (a partition).
// What it took is given back (Refund) and the answer is not delivered: an answer delivered in
// full is charged in full, and nothing is spent beyond the balance.
var ErrCapped = fmt.Errorf("%w: the charge went beyond what was free when it was committed", ErrInsufficient)

// ErrUnavailable wraps a failure to reach the database: the request cannot be decided (or its
// charge made durable) now, and may succeed later.
var ErrUnavailable = errors.New("the database is unreachable")

// Timings of the ledger; the contract bounds them: a charge shows in the balance within 2 s,
// an unused reservation returns to the pool within 5 s.
const (
	DefaultFlushEvery = 500 * time.Millisecond
	DefaultLeaseTTL   = 5 * time.Second
	DefaultIdle       = 2 * time.Second
	// DefaultDBTimeout bounds every database call of the ledger.
	DefaultDBTimeout = 2 * time.Second
	// DefaultGroupWindow: see Ledger.GroupWindow. None: under load a commit is always under
	// way and the charges arriving meanwhile form the next group by themselves; waiting for
	// more only lengthened every answer's end (BenchmarkChargeConcurrent, 64 requests: wait
	// p50 3.1-4.8 ms without the window, 5.2-6.6 ms with 1 ms, and no more transactions).
	DefaultGroupWindow = 0
	// DefaultBatchWindow: see Ledger.BatchWindow. A batch item waits at most this long more
	// for its charge; its items are not waited for by anyone, and their commits are what
	// a batch costs the database.
	DefaultBatchWindow = 20 * time.Millisecond
	// leaseFactor: a lease grows by this many holds at once, so that a busy profile costs one
	// database transaction per several requests instead of one per request.
	leaseFactor = 8
	// maxPending bounds the records waiting for the database (about 300 bytes each).
	maxPending = 100_000
	// maxTries bounds the settlements of an uncharged record that the database refuses; it
	// is then set aside with a log line.
	maxTries = 5
	// DefaultAbandonAfter is how long a replica must be silent (it reports every second)
	// before its unfinished request records are marked abandoned. A live replica whose
	// records were abandoned during a long database stall overwrites them when it settles.
	DefaultAbandonAfter = 10 * time.Second
)

// Ledger is one replica's view of money in flight. Holds are taken in memory against a lease
// on the profile's balance; charges are made durable before the answer's end is delivered,
// in group commits (Charge); records without a charge are written in the background (Finish).
// At any moment lease >= held + spent for every profile, the database's leases of all
// replicas never exceed a balance, and a lease is used only before a local deadline that
// falls before the row's expiry, so replicas together never spend more than a profile has.
type Ledger struct {
	Store      *store.Store
	Replica    uuid.UUID
	FlushEvery time.Duration
	LeaseTTL   time.Duration
	Idle       time.Duration
	DBTimeout  time.Duration
	// AbandonAfter: see DefaultAbandonAfter.
	AbandonAfter time.Duration
	// GroupWindow is how long the committer may wait, after the first charge of a group, for
	// more to join it, when the previous group had more than one, and until the group has
	// groupTarget charges; a lone charge commits at once. Charges arriving during a commit
	// always form the next group.
	GroupWindow time.Duration
	Log         *slog.Logger
	// OnSettle, when set, observes every settlement transaction (metrics).
	OnSettle func(batch int, took time.Duration, err error)
	// OnCharge, when set, observes how long each Charge waited (metrics).
	OnCharge func(wait time.Duration)
	// BatchWindow bounds how long a group of batch items' charges waits for the other batch
	// items running on the replica (gatherBatch); DefaultBatchWindow when 0, none when
	// negative.
	BatchWindow time.Duration
	// SplitWaits keeps the parts of each Charge wait (Stats' Queue, Wake and Cover; zero
	// otherwise): three more windows of waitWindow durations, for benchmarks.
	SplitWaits bool

	mu       sync.Mutex
	accounts map[uuid.UUID]*account
	budgets  map[store.BudgetRef]*account // key budgets by window (budget.go)
	pending  []*queued                    // records settled in the background
	charges  []*charge                    // charges waiting for the committer
	// spareCharges is the slice of a group committed before, cleared, for the next group to
	// gather in (takeCharges, giveCharges): a group's slice grew from nothing every commit.
	spareCharges []*charge
	// settlements is the committer's Settlement slice, cleared, for its next commit: only the
	// committer goroutine touches it, and its commits follow one another (a refused group's
	// charges are tried one at a time once the group's settlement has returned).
	settlements []store.Settlement
	wake        chan struct{}
	flushMu     sync.Mutex // one background settlement at a time

	startOnce  sync.Once
	stopCommit chan struct{}
	commitDone chan struct{}
	stats      Stats
	closed     bool  // Close has begun: no more charges
	dropped    int64 // uncharged records not kept while too many were pending
	refunds    sync.WaitGroup
	live       atomic.Int32 // LiveReplicas
	// batchRunning is the number of batch items running on the replica whose charge is not
	// yet queued (SetBatchRunning); batchQueued hears each batch charge queued.
	batchRunning func() int64
	batchQueued  func(requestID string)
	background   sync.WaitGroup // lease growths beside requests
	waits        ring           // Charge waits
	txs          ring           // group commit transactions
	queues       ring           // Charge waits from the queue to its transaction's start
	wakes        ring           // Charge waits from its transaction's end to its return
	covers       ring           // Charge waits before the queue (the hold's growth)
}

// Stats counts the committer's work.
type Stats struct {
	Charges, Commits int64
	// Percentiles of the time Charge took (what durability adds at the end of an answer),
	// over the last waitWindow charges.
	WaitP50, WaitP99 time.Duration
	// Percentiles of the group commits' transactions (one database round trip each), over
	// the last waitWindow of them: the part of a wait spent in the database.
	TxP50, TxP99 time.Duration
	// The parts of a wait beside its own transaction: from joining the committer's queue
	// to its transaction's start (the transaction before it, the gathering), and from its
	// transaction's end to Charge's return (the goroutine scheduled again); and before the
	// queue, the hold's growth to the cost (Cover). Kept only with SplitWaits.
	QueueP50, QueueP99 time.Duration
	WakeP50, WakeP99   time.Duration
	CoverP50, CoverP99 time.Duration
}

type growth struct {
	done chan struct{}
	err  error
}

type queued struct {
	rec    store.RequestRecord
	tries  int
	budget *budgetUse // the budget account whose spent counts rec's cost until settled
}

type charge struct {
	rec   store.RequestRecord
	hold  *Hold
	batch bool // a batch item's charge (gatherBatch)
	// done has room for one: the committer sends once when the charge is settled or failed
	// (wake), and the channel serves the charge's next use from the pool.
	done    chan struct{}
	charged decimal.Decimal
	// costText is the text of the record's cost as the commit sent it (costTexts), kept when
	// what was charged is that cost: the answer shows the same digits without formatting
	// them again (Request.ChargedText). Empty: not known.
	costText string
	capped   bool
	err      error
	// When it joined the committer's queue, and its transaction's start and end (the last
	// one tried): Charge splits its wait into these parts (Stats). Monotonic readings
	// (clock.Mono): only the intervals between them are read.
	queued, txStart, txEnd int64
}

// Hold is money reserved for one request.
type Hold struct {
	Profile uuid.UUID
	// held is the amount held, in the books' form: a request's hold is worked out in nanos
	// (Price.worstAmount) and never needs a decimal (a big integer and its word, two
	// allocations) unless someone asks for it (Amount).
	held   amount
	done   bool
	budget *budgetUse // the key budget the hold is taken from too; nil: none
}

// NewLedger makes a ledger for a replica with a fresh id.
func NewLedger(st *store.Store, log *slog.Logger) *Ledger {
	if log == nil {
		log = slog.Default()
	}
	return &Ledger{Store: st, Replica: uuid.New(), Log: log,
		FlushEvery: DefaultFlushEvery, LeaseTTL: DefaultLeaseTTL, Idle: DefaultIdle, DBTimeout: DefaultDBTimeout, GroupWindow: DefaultGroupWindow, AbandonAfter: DefaultAbandonAfter,
		accounts: map[uuid.UUID]*account{}, budgets: map[store.BudgetRef]*account{}, wake: make(chan struct{}, 1),
		stopCommit: make(chan struct{}), commitDone: make(chan struct{})}
}

// Stats returns the committer's counters.
func (l *Ledger) Stats() Stats {
	l.mu.Lock()
	st := l.stats
	w, tx := slices.Clone(l.waits.us), slices.Clone(l.txs.us)
	q, wk, cv := slices.Clone(l.queues.us), slices.Clone(l.wakes.us), slices.Clone(l.covers.us)
	l.mu.Unlock()
	st.WaitP50, st.WaitP99 = percentiles(w)
	st.TxP50, st.TxP99 = percentiles(tx)
	st.QueueP50, st.QueueP99 = percentiles(q)
	st.WakeP50, st.WakeP99 = percentiles(wk)
	st.CoverP50, st.CoverP99 = percentiles(cv)
	return st
}

func (l *Ledger) account(p uuid.UUID) *account {
	a := l.accounts[p]
	if a == nil {
		a = &account{}
		l.accounts[p] = a
	}
	a.lastUse = clock.Mono()
	return a
}

// margin is how long before the row's expiry a replica stops using a lease: a replica cut
// off from the database cannot renew, and must stop before another replica may lease the
// same money.
func (l *Ledger) margin() time.Duration { return l.LeaseTTL / 4 }

// adopt takes a lease state read from the database when it is newer than the one in memory,
// and a later deadline in any case (the write that set it also set the row's expiry, which
// later writes of the amount do not shorten). deadline is a clock.Mono reading, 0 for none:
// the lease's times are intervals from the moment a write was sent, as time.Time's
// monotonic readings compared them, read at half a time.Now's cost on every hold.
func (l *Ledger) adopt(a *account, st store.LeaseState, deadline int64) {
	if deadline > a.deadline {
		a.deadline = deadline
	}
	if st.Version < a.version {
		return
	}
	a.lease, a.version = amount{}, st.Version
	if st.Present {
		a.lease = amountOf(st.Amount)
	}
}

func (l *Ledger) dbContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), l.DBTimeout)
}

func unavailable(err error) error {
	if store.Unavailable(err) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// Hold reserves amount for a request of the profile. When the usable part of the replica's
// lease is too small, the hold is counted at once (so that no other request takes the room it
// needs) and the lease is set to cover everything this replica holds and has charged
// unsettled, checked against the free balance: the answer is final, granted or refused.
// One growth runs per profile at a time and other requests that do not fit wait for it. No
// lock is held across the database call.
func (l *Ledger) Hold(ctx context.Context, profile uuid.UUID, amount decimal.Decimal) (*Hold, error) {
	return l.hold(ctx, profile, nil, amount, leaseAhead)
}

// leaseAhead is the room a growth asks for beyond a hold, in holds, as a decimal made once.
var leaseAhead = decimal.NewFromInt(leaseFactor - 1)

// hold is Hold with the room a lease growth asks for beyond what is needed: amount times
// aheadOf (worked out only when the lease grows).
func (l *Ledger) hold(ctx context.Context, profile uuid.UUID, b *budgetUse, amount, aheadOf decimal.Decimal) (*Hold, error) {
	return l.holdInto(ctx, nil, profile, b, amountOf(amount), aheadOf)
}

// holdInto is hold whose Hold is dst (a new one when dst is nil): a request's first hold
// lives in the request (Request.first).
func (l *Ledger) holdInto(ctx context.Context, dst *Hold, profile uuid.UUID, b *budgetUse, x amount, aheadOf decimal.Decimal) (*Hold, error) {
	if err := l.takeBoth(ctx, profile, b, x, aheadOf); err != nil {
		return nil, err
	}
	if dst == nil {
		dst = new(Hold)
	}
	*dst = Hold{Profile: profile, held: x, budget: b}
	return dst, nil
}

// Amount is the amount h holds.
func (h *Hold) Amount() decimal.Decimal { return h.held.dec() }

// takeBoth takes amount from the key's budget (when b is set) and then from the profile's
// balance; on error neither is taken.
func (l *Ledger) takeBoth(ctx context.Context, profile uuid.UUID, b *budgetUse, x amount, aheadOf decimal.Decimal) error {
	if b != nil {
		if err := l.take(ctx, pool{profile: profile, budget: b}, x, aheadOf); err != nil {
			return err
		}
	}
	if err := l.take(ctx, pool{profile: profile}, x, aheadOf); err != nil {
		if b != nil {
			l.mu.Lock()
			a := l.budgetAccountOf(b.ref)
			a.held = a.held.sub(x)
			l.mu.Unlock()
		}
		return err
	}
	return nil
}

// pool is what a hold is taken from: a profile's balance, or (budget set) a key's budget in
// one window. Both are leased and held alike.
type pool struct {
	profile uuid.UUID
	budget  *budgetUse
}

// accountOf is the pool's account; the caller holds l.mu.
func (l *Ledger) accountOf(p pool) *account {
	if p.budget != nil {
		return l.budgetAccount(p.budget)
	}
	return l.account(p.profile)
}

// extend grows the replica's lease on the pool in the database: ErrInsufficient or a
// *BudgetError when not even need is free (amount: the part of need the asking request
// adds).
func (l *Ledger) extend(ctx context.Context, p pool, need, want, amount decimal.Decimal) (store.LeaseState, error) {
	if p.budget == nil {
		st, err := l.Store.ExtendLease(ctx, p.profile, l.Replica, need, want, l.LeaseTTL)
		if errors.Is(err, store.ErrInsufficientBalance) {
			err = ErrInsufficient
		}
		return st, err
	}
	st, err := l.Store.ExtendBudgetLease(ctx, p.budget.ref, l.Replica, need, want, l.LeaseTTL)
	var r *store.BudgetRefusal
	if errors.As(err, &r) {
		return st, p.budget.refusal(r, need.Sub(amount))
	}
	return st, err
}

// refused tells a final refusal of a growth (the balance or a budget cannot cover it) from a
// failure to decide.
func refused(err error) bool {
	return errors.Is(err, ErrInsufficient) || errors.Is(err, ErrBudgetExceeded)
}

// take is hold without the Hold: it counts amount as held in the pool, from the lease's
// free part or after a growth (cover adds it to an existing hold without a Hold of its own).
func (l *Ledger) take(ctx context.Context, p pool, x amount, aheadOf decimal.Decimal) error {
	for {
		l.mu.Lock()
		a := l.accountOf(p)
		now := clock.Mono()
		if held, room, fits := a.fit(now, x); fits {
			a.held = held
			a.use(now, x)
			if a.growing == nil && !l.closed && room.cmp(a.recentUse().times(lowWindows)) < 0 {
				l.growBeside(p, a, now)
			}
			l.mu.Unlock()
			return nil
		}
		if g := a.growing; g != nil {
			l.mu.Unlock()
			select {
			case <-g.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			if g.err != nil && !refused(g.err) {
				return g.err
			}
			continue
		}
		g := &growth{done: make(chan struct{})}
		a.growing = g
		a.held = a.held.add(x)
		a.use(now, x)
		need := a.held.add(a.spent).dec()
		want := need.Add(decimal.Max(x.dec().Mul(aheadOf), a.recentUse().times(aheadWindows).dec()))
		l.mu.Unlock()

		started := clock.Mono()
		dctx, cancel := l.dbContext(ctx)
		st, err := l.extend(dctx, p, need, want, x.dec())
		cancel()
		if err != nil && !refused(err) {
			err = unavailable(err)
			l.Log.Warn("lease growth failed", "profile", p.profile, "budget", p.budget != nil, "err", err)
		}
		l.mu.Lock()
		a.growing = nil
		g.err = err
		close(g.done)
		if err != nil {
			a.held = a.held.sub(x)
			l.mu.Unlock()
			return err
		}
		l.adopt(a, st, started+int64(l.LeaseTTL-l.margin()))
		l.mu.Unlock()
		return nil
	}
}

// growBeside grows a's lease in the background before it runs dry, from what the replica
// holds and has charged unsettled plus room ahead for its recent use; requests that do not
// fit meanwhile wait for it as for any growth, the others go on. A failure changes nothing:
// the next request that does not fit grows (and is refused, or learns the outage) itself.
// The caller holds l.mu.
func (l *Ledger) growBeside(p pool, a *account, now int64) {
	g := &growth{done: make(chan struct{})}
	a.growing = g
	held := a.held.add(a.spent)
	need := held.dec()
	// Never shrink a lease that still covers more than need (settlements shrink it as they
	// charge; what is left is in use or about to be).
	want := maxAmount(held, a.lease).add(a.recentUse().times(aheadWindows)).dec()
	l.background.Add(1)
	go func() {
		defer l.background.Done()
		dctx, cancel := context.WithTimeout(context.Background(), l.DBTimeout)
		st, err := l.extend(dctx, p, need, want, decimal.Zero)
		cancel()
		l.mu.Lock()
		defer l.mu.Unlock()
		a.growing = nil
		close(g.done) // g.err stays nil: waiters try again, and grow themselves if need be
		if err != nil {
			if !refused(err) {
				l.Log.Warn("lease growth beside requests failed", "profile", p.profile, "budget", p.budget != nil, "err", err)
			}
			return
		}
		l.adopt(a, st, now+int64(l.LeaseTTL-l.margin()))
	}()
}

// release gives a hold back; the caller holds l.mu.
func (l *Ledger) release(h *Hold) {
	if h != nil && !h.done {
		h.done = true
		x := h.held
		a := l.account(h.Profile)
		a.held = a.held.sub(x)
		if h.budget != nil {
			b := l.budgetAccountOf(h.budget.ref)
			b.held = b.held.sub(x)
		}
	}
}

// Finish releases a hold and queues the request's record for background settlement. A
// record with a cost is charged then too (spent until settled); the request paths make their
// charges durable with Charge instead, and Finish only what is not charged.
func (l *Ledger) Finish(h *Hold, rec store.RequestRecord) {
	l.mu.Lock()
	l.release(h)
	var budget *budgetUse
	if rec.Cost.Valid {
		cost := amountOf(rec.Cost.Decimal)
		a := l.account(rec.ProfileID)
		a.spent = a.spent.add(cost)
		if h != nil && h.budget != nil {
			budget = h.budget
			b := l.budgetAccountOf(budget.ref)
			b.spent = b.spent.add(cost)
		}
	}
	if len(l.pending) >= maxPending && !rec.Cost.Valid {
		// A long outage under load: memory stays bounded; the reserved ids of dropped
		// records are finished by the sweeper as abandoned.
		l.dropped++
		l.mu.Unlock()
		return
	}
	l.pending = append(l.pending, &queued{rec: rec, budget: budget})
	l.mu.Unlock()
}

// Pending is the number of records waiting for background settlement.
func (l *Ledger) Pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending)
}
