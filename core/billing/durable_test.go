package billing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"modelgateway/core/store"
	"modelgateway/core/store/storetest"
	"modelgateway/core/wire/clock"
)

// fixture is a store with one profile and a real key for its records.
type fixture struct {
	st  *store.Store
	p   uuid.UUID
	key uuid.UUID
}

func newFixture(t testing.TB, credit string) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, storetest.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	f := &fixture{st: st, p: newProfile(t, st, credit), key: uuid.New()}
	if _, err := st.Pool.Exec(ctx, `INSERT INTO api_keys (id, profile_id, prefix, secret_hash) VALUES ($1, $2, 'x', $3)`, f.key, f.p, f.key[:]); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) record(id string, cost string) store.RequestRecord {
	r := record(f.p, id, nil)
	r.KeyID = f.key
	if cost != "" {
		r.Cost = decimal.NullDecimal{Decimal: dec(cost), Valid: true}
		r.UsageReliable = true
	}
	return r
}

// checkLedger is the invariant every test that moves money ends with: balance = sum of
// entries and never below zero, charges = the records' costs, no record left in_progress.
func checkLedger(t *testing.T, st *store.Store, p uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	if err := checkInvariant(ctx, st, p); err != nil {
		t.Fatal(err)
	}
	var charges, costs decimal.Decimal
	var inProgress int
	if err := st.Pool.QueryRow(ctx, `
		SELECT (SELECT coalesce(-sum(amount), 0) FROM ledger_entries WHERE profile_id = $1 AND kind = 'charge'),
		       (SELECT coalesce(sum(cost), 0) FROM requests WHERE profile_id = $1),
		       (SELECT count(*) FROM requests WHERE profile_id = $1 AND status = 'in_progress')`, p).Scan(&charges, &costs, &inProgress); err != nil {
		t.Fatal(err)
	}
	if !charges.Equal(costs) || inProgress != 0 {
		t.Fatalf("charges %s, records' costs %s, %d records in progress", charges, costs, inProgress)
	}
}

func balanceOf(t *testing.T, st *store.Store, p uuid.UUID) decimal.Decimal {
	t.Helper()
	prof, err := st.GetProfile(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return prof.Balance
}

// A long sequence of requests whose usage costs three times their hold keeps being served
// while the free balance covers the next hold: over-hold charges must not leave the lease
// short (issue 13: the third request of a funded profile was refused). Each is charged in
// full; the one the balance cannot pay in full is refused, and nothing of it is taken.
func TestOverHoldChargesKeepBeingServed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "10")
	l := NewLedger(f.st, nil)
	t.Cleanup(func() { _ = l.Close(ctx) })
	hold, cost := dec("0.1"), "0.3"
	served := 0
	for i := range 100 {
		h, err := l.Hold(ctx, f.p, hold)
		if err != nil {
			t.Fatalf("request %d refused its hold with %s on the balance: %v", i, balanceOf(t, f.st, f.p), err)
		}
		r := f.record(fmt.Sprint("r", i), cost)
		charged, err := l.Charge(ctx, h, r, "insufficient_balance")
		if errors.Is(err, ErrInsufficient) {
			r.Status, r.Cost = "insufficient_balance", decimal.NullDecimal{}
			l.Finish(h, r)
			break
		}
		if err != nil || !charged.Equal(dec(cost)) {
			t.Fatalf("request %d charged %s of %s: %v", i, charged, cost, err)
		}
		served++
	}
	// 10 / 0.3: 33 full charges; the 34th is granted its hold on 0.1 left, and refused its
	// charge of 0.3.
	if served != 33 {
		t.Fatalf("%d requests served on 10 with charges of 0.3", served)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if b := balanceOf(t, f.st, f.p); !b.Equal(dec("0.1")) {
		t.Fatalf("balance %s at the end, want 0.1", b)
	}
	checkLedger(t, f.st, f.p)
}

// Charge returns only once the charge is in the database; charges arriving together share
// transactions.
func TestChargesAreDurableAndGrouped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "100")
	l := NewLedger(f.st, nil)
	l.GroupWindow = time.Millisecond
	t.Cleanup(func() { _ = l.Close(ctx) })
	const workers, each = 64, 10
	chargeConcurrently(t, l, f, workers, each, "w", func(id string) {
		var n int
		if err := f.st.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger_entries WHERE profile_id = $1 AND request_id = $2`, f.p, id).Scan(&n); err != nil || n != 1 {
			t.Errorf("charge %s: %d entries after Charge returned (%v)", id, n, err)
		}
	})
	s := l.Stats()
	t.Logf("%d charges in %d commits, wait p50 %s p99 %s", s.Charges, s.Commits, s.WaitP50, s.WaitP99)
	if s.Charges != workers*each || s.Commits >= s.Charges/2 {
		t.Fatalf("%d charges in %d commits: not grouped", s.Charges, s.Commits)
	}
	if b := balanceOf(t, f.st, f.p); !b.Equal(dec("93.6")) {
		t.Fatalf("balance %s, want 93.6", b)
	}
	checkLedger(t, f.st, f.p)
}

// chargeConcurrently holds and charges 0.01 on f's profile from workers goroutines, each
// times apiece, under the ids prefix<worker>-<n>; after, when set, runs after each charge
// with its id. A failed hold or charge fails the test.
func chargeConcurrently(t *testing.T, l *Ledger, f *fixture, workers, each int, prefix string, after func(id string)) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				h, err := l.Hold(ctx, f.p, dec("0.01"))
				if err != nil {
					t.Error(err)
					return
				}
				id := fmt.Sprintf("%s%d-%d", prefix, w, i)
				if _, err := l.Charge(ctx, h, f.record(id, "0.01"), "insufficient_balance"); err != nil {
					t.Error(err)
					return
				}
				if after != nil {
					after(id)
				}
			}
		}()
	}
	wg.Wait()
}

// A record the database refuses (a NUL byte in its model, which PostgreSQL text cannot hold) fails alone: the other charges of
// its group commit, a background record is retried alone and set aside after maxTries with a
// log line, and later settlements go on.
func TestABadRecordFailsAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "10")
	var logs bytes.Buffer
	var logMu sync.Mutex
	l := NewLedger(f.st, slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, nil)))
	l.GroupWindow = 20 * time.Millisecond // the three charges share a group
	t.Cleanup(func() { _ = l.Close(ctx) })
	bad := f.record("bad", "0.5")
	bad.Model = "bad\x00model"
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, r := range []store.RequestRecord{f.record("good-1", "0.5"), bad, f.record("good-2", "0.5")} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := l.Hold(ctx, f.p, dec("0.5"))
			if err != nil {
				errs[i] = err
				return
			}
			if _, errs[i] = l.Charge(ctx, h, r, "insufficient_balance"); errs[i] != nil {
				l.Finish(h, f.record("unused-"+r.RequestID, ""))
			}
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] == nil || errs[2] != nil || errors.Is(errs[1], ErrUnavailable) {
		t.Fatalf("charges: %v", errs)
	}
	// Background: a poisoned record among good ones, flushed until it is set aside.
	poison := bad
	poison.RequestID, poison.Cost = "poison", decimal.NullDecimal{}
	l.Finish(nil, f.record("late-1", ""))
	l.Finish(nil, poison)
	l.Finish(nil, f.record("late-2", ""))
	for range maxTries {
		_ = l.Flush(ctx)
	}
	if n := l.Pending(); n != 0 {
		t.Fatalf("%d records still pending after %d flushes", n, maxTries)
	}
	var n int
	_ = f.st.Pool.QueryRow(ctx, `SELECT count(*) FROM requests WHERE profile_id = $1 AND request_id IN ('late-1', 'late-2', 'unused-bad', 'good-1', 'good-2')`, f.p).Scan(&n)
	if n != 5 {
		t.Fatalf("%d of the 5 good records written", n)
	}
	logMu.Lock()
	out := logs.String()
	logMu.Unlock()
	if !strings.Contains(out, "set aside") || !strings.Contains(out, "request_id=poison") || !strings.Contains(out, "request_id=bad") {
		t.Fatalf("log:\n%s", out)
	}
	if b := balanceOf(t, f.st, f.p); !b.Equal(dec("9")) {
		t.Fatalf("balance %s, want 9", b)
	}
	checkLedger(t, f.st, f.p)
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// Two settlements of one record in one batch are merged (the charged one wins), and a replay
// of a settled charge charges nothing again.
func TestDuplicatesInABatchAreMerged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "1")
	batch := []store.Settlement{{Record: f.record("dup", "")}, {Record: f.record("dup", "0.25")}, {Record: f.record("other", "0.25")}}
	res, err := f.st.Settle(ctx, uuid.New(), batch)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Charged[0].Decimal.Equal(dec("0.25")) || !res.Charged[1].Decimal.Equal(dec("0.25")) {
		t.Fatalf("charged %v", res.Charged)
	}
	if _, err := f.st.Settle(ctx, uuid.New(), batch[1:2]); err != nil {
		t.Fatal(err)
	}
	if b := balanceOf(t, f.st, f.p); !b.Equal(dec("0.5")) {
		t.Fatalf("balance %s, want 0.5", b)
	}
	checkLedger(t, f.st, f.p)
}

// A charge beyond what is free (the usage exceeded the hold and the balance, or reaches into
// another replica's lease) is refused and takes nothing: the balance never goes below zero
// nor below what other replicas have reserved, and an answer is charged in full or not at all.
func TestChargesBeyondTheFreeBalanceAreRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "1")
	a, b := NewLedger(f.st, nil), NewLedger(f.st, nil)
	t.Cleanup(func() { _ = a.Close(ctx); _ = b.Close(ctx) })
	hb, err := b.Hold(ctx, f.p, dec("0.4")) // b's lease: 0.4 up to 1 (8 holds)
	if err != nil {
		t.Fatal(err)
	}
	leased, _ := f.st.Leased(ctx, f.p)
	if !leased.Equal(dec("1")) {
		t.Fatalf("b leased %s", leased)
	}
	// b's lease is all the balance: a cannot hold anything, and a charge without a hold (a
	// realtime response past its reserve) takes nothing from what b reserved.
	if _, err := a.Hold(ctx, f.p, dec("0.1")); !errors.Is(err, ErrInsufficient) {
		t.Fatalf("a held on a balance leased to b: %v", err)
	}
	if charged, err := a.Charge(ctx, nil, f.record("over", "5"), "insufficient_balance"); !errors.Is(err, ErrInsufficient) {
		t.Fatalf("a charged %s on a balance leased to b: %v", charged, err)
	}
	if charged, err := b.Charge(ctx, hb, f.record("b-1", "5"), "insufficient_balance"); !errors.Is(err, ErrInsufficient) {
		t.Fatalf("b charged %s of 5 on a balance of 1: %v", charged, err)
	}
	// The refused charge left b's hold in place: the same answer at its price is charged.
	if charged, err := b.Charge(ctx, hb, f.record("b-1", "0.4"), "insufficient_balance"); err != nil || !charged.Equal(dec("0.4")) {
		t.Fatalf("b charged %s of 0.4: %v", charged, err)
	}
	if bal := balanceOf(t, f.st, f.p); !bal.Equal(dec("0.6")) {
		t.Fatalf("balance %s, want 0.6", bal)
	}
	checkLedger(t, f.st, f.p)
}

// A charge above its hold takes only what no request holds: with two answers in flight on
// one replica, the heavy one, whose usage the balance cannot pay, is refused without
// touching what the other holds, and the other is charged in full (issue 13: it was charged
// 0 after the heavy one had been capped at the balance less the other replicas' leases).
func TestOverHoldChargeLeavesOtherHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "0.5")
	l := NewLedger(f.st, nil)
	t.Cleanup(func() { _ = l.Close(ctx) })
	plain, err := l.Hold(ctx, f.p, dec("0.012"))
	if err != nil {
		t.Fatal(err)
	}
	heavy, err := l.Hold(ctx, f.p, dec("0.13"))
	if err != nil {
		t.Fatal(err)
	}
	if charged, err := l.Charge(ctx, heavy, f.record("heavy", "2.012"), "insufficient_balance"); !errors.Is(err, ErrInsufficient) {
		t.Fatalf("heavy charged %s of 2.012 on a balance of 0.5: %v", charged, err)
	}
	// Within what is free (0.5 less the plain hold), a heavier answer is charged in full.
	if charged, err := l.Charge(ctx, heavy, f.record("heavy", "0.488"), "insufficient_balance"); err != nil || !charged.Equal(dec("0.488")) {
		t.Fatalf("heavy charged %s of 0.488: %v", charged, err)
	}
	if charged, err := l.Charge(ctx, plain, f.record("plain", "0.012"), "insufficient_balance"); err != nil || !charged.Equal(dec("0.012")) {
		t.Fatalf("plain charged %s of 0.012: %v", charged, err)
	}
	if bal := balanceOf(t, f.st, f.p); !bal.IsZero() {
		t.Fatalf("balance %s, want 0", bal)
	}
	checkLedger(t, f.st, f.p)
}

// A replica whose lease expired in the database (cut off from it, as in a partition) while
// another replica leased the money commits a charge that the database can take only in part:
// the answer is refused (ErrCapped), what was taken is given back, and the record is
// uncharged with the status given.
func TestChargeCappedAfterTheLeaseExpiredIsGivenBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "1")
	a, b := NewLedger(f.st, nil), NewLedger(f.st, nil)
	t.Cleanup(func() { _ = b.Close(ctx) })
	ha, err := a.Hold(ctx, f.p, dec("0.1")) // a's lease: 0.8
	if err != nil {
		t.Fatal(err)
	}
	// The partition: a's row expires in the database while a still counts on it.
	if _, err := f.st.Pool.Exec(ctx, `UPDATE balance_leases SET expires_at = now() - interval '1 second' WHERE replica_id = $1`, a.Replica); err != nil {
		t.Fatal(err)
	}
	if _, err := b.hold(ctx, f.p, nil, dec("0.95"), decimal.Zero); err != nil { // b's lease: 0.95
		t.Fatal(err)
	}
	// The database can take 0.05 of 0.1.
	charged, err := a.Charge(ctx, ha, f.record("late", "0.1"), "insufficient_balance")
	if !errors.Is(err, ErrCapped) || !errors.Is(err, ErrInsufficient) {
		t.Fatalf("a charged %s of 0.1 on money b leased: %v", charged, err)
	}
	if err := a.Close(ctx); err != nil { // waits for the refund
		t.Fatal(err)
	}
	var status string
	var cost decimal.NullDecimal
	if err := f.st.Pool.QueryRow(ctx, `SELECT status, cost FROM requests WHERE profile_id = $1 AND request_id = 'late'`, f.p).Scan(&status, &cost); err != nil {
		t.Fatal(err)
	}
	if status != "insufficient_balance" || cost.Valid {
		t.Fatalf("record %s cost %v, want insufficient_balance uncharged", status, cost)
	}
	if bal := balanceOf(t, f.st, f.p); !bal.Equal(dec("1")) {
		t.Fatalf("balance %s, want 1", bal)
	}
	checkLedger(t, f.st, f.p)
}

// A lease that expired in the database is not renewed blindly: another replica may have
// leased the money since; the replica must grow it again, which checks the free balance.
// And a replica stops using a lease before its row may expire.
func TestExpiredLeasesAreCheckedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "1")
	a, b := NewLedger(f.st, nil), NewLedger(f.st, nil)
	a.LeaseTTL = 800 * time.Millisecond
	t.Cleanup(func() { _ = a.Close(ctx); _ = b.Close(ctx) })
	if _, err := a.Hold(ctx, f.p, dec("0.125")); err != nil { // lease 1
		t.Fatal(err)
	}
	// The local deadline falls before the row expires: after it, a goes to the database.
	time.Sleep(a.LeaseTTL - a.margin() + 50*time.Millisecond)
	a.mu.Lock()
	free := a.accounts[f.p].free(clock.Mono()).dec()
	a.mu.Unlock()
	if !free.IsZero() {
		t.Fatalf("a still uses its lease after the local deadline: %s free", free)
	}
	time.Sleep(a.margin()) // the row has expired now
	if _, err := b.Hold(ctx, f.p, dec("0.5")); err != nil {
		t.Fatalf("b could not lease money whose lease expired: %v", err)
	}
	if err := a.maintainLeases(ctx); err != nil {
		t.Fatal(err)
	}
	var expires time.Time
	_ = f.st.Pool.QueryRow(ctx, `SELECT expires_at FROM balance_leases WHERE replica_id = $1`, a.Replica).Scan(&expires)
	if expires.After(time.Now()) {
		t.Fatal("the expired lease was renewed")
	}
	// a's in-flight hold of 0.125 still counts: 1 - b's 0.5.. lease is 1 for b (8 x 0.5 capped).
	if _, err := a.Hold(ctx, f.p, dec("0.125")); !errors.Is(err, ErrInsufficient) {
		t.Fatalf("a held again on money b leased: %v", err)
	}
	leased, _ := f.st.Leased(ctx, f.p)
	if leased.GreaterThan(dec("1")) {
		t.Fatalf("leases %s above the balance", leased)
	}
}

// A negative adjustment may not take the balance below the replicas' leases.
func TestNegativeAdjustmentsRespectLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "1")
	l := NewLedger(f.st, nil)
	if _, err := l.Hold(ctx, f.p, dec("0.05")); err != nil { // lease 0.4
		t.Fatal(err)
	}
	if _, err := f.st.CreditProfile(ctx, f.p, dec("-0.7"), "chargeback", "adj-1"); !errors.Is(err, store.ErrReserved) {
		t.Fatalf("adjustment into a lease: %v", err)
	}
	if _, err := f.st.CreditProfile(ctx, f.p, dec("-0.6"), "chargeback", "adj-2"); err != nil {
		t.Fatal(err)
	}
	avail, err := f.st.Available(ctx, f.p)
	if err != nil || !avail.IsZero() {
		t.Fatalf("available %s, %v", avail, err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if avail, _ := f.st.Available(ctx, f.p); !avail.Equal(dec("0.4")) {
		t.Fatalf("available %s after the lease returned, want 0.4", avail)
	}
	checkLedger(t, f.st, f.p)
}

// Records reserved by a replica that stopped reporting are finished as abandoned; those of a
// live replica are left alone.
func TestRecordsOfDeadReplicasAreAbandoned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "1")
	live, dead := uuid.New(), uuid.New()
	if err := f.st.Heartbeat(ctx, live); err != nil {
		t.Fatal(err)
	}
	for id, replica := range map[string]uuid.UUID{"of-live": live, "of-dead": dead} {
		r := f.record(id, "")
		r.StartTime = time.Now().Add(-time.Minute)
		if ok, err := f.st.ReserveRequestID(ctx, &r, replica); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	n, err := f.st.SweepAbandoned(ctx, 30*time.Second)
	if err != nil || n != 1 {
		t.Fatalf("abandoned %d, %v", n, err)
	}
	var status string
	_ = f.st.Pool.QueryRow(ctx, `SELECT status FROM requests WHERE request_id = 'of-dead'`).Scan(&status)
	if status != "abandoned" {
		t.Fatalf("status %q", status)
	}
	// The live replica finishes its own record.
	if _, err := f.st.Settle(ctx, live, []store.Settlement{{Record: f.record("of-live", "0.1")}}); err != nil {
		t.Fatal(err)
	}
	checkLedger(t, f.st, f.p)
}

// With the database unreachable a hold fails within the deadline as unavailable, not as
// insufficient balance.
func TestUnreachableDatabaseIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://gw@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	l := NewLedger(&store.Store{Pool: pool}, nil)
	start := time.Now()
	_, err = l.Hold(ctx, uuid.New(), dec("1"))
	if !errors.Is(err, ErrUnavailable) || time.Since(start) > 2*l.DBTimeout {
		t.Fatalf("hold: %v after %s", err, time.Since(start))
	}
	if _, err := l.Charge(ctx, nil, record(uuid.New(), "x", &decimal.Zero), "insufficient_balance"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("charge: %v", err)
	}
	_ = pgx.ErrNoRows
}

// A committed charge whose answer's end then failed to reach the client is given back: the
// answer was cut after all. The ledger keeps both entries; charges still equal the records'
// costs, and a replayed refund gives nothing twice.
func TestRefundOfACutAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "1")
	l := NewLedger(f.st, nil)
	h, err := l.Hold(ctx, f.p, dec("0.25"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Charge(ctx, h, f.record("cut", "0.25"), "insufficient_balance"); err != nil {
		t.Fatal(err)
	}
	if b := balanceOf(t, f.st, f.p); !b.Equal(dec("0.75")) {
		t.Fatalf("balance %s after the charge", b)
	}
	l.Refund(f.p, "cut", "cancelled")
	l.Refund(f.p, "cut", "cancelled")
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if b := balanceOf(t, f.st, f.p); !b.Equal(dec("1")) {
		t.Fatalf("balance %s after the refund", b)
	}
	var status string
	var cost decimal.NullDecimal
	_ = f.st.Pool.QueryRow(ctx, `SELECT status, cost FROM requests WHERE request_id = 'cut'`).Scan(&status, &cost)
	if status != "cancelled" || cost.Valid {
		t.Fatalf("record %s %v", status, cost)
	}
	checkLedger(t, f.st, f.p)
}

// With the database frozen (it accepts connections and never answers), requests of one
// profile that need a lease share one growth and fail together at its deadline as
// unavailable, instead of waiting for one deadline each.
func TestFrozenDatabaseFailsHoldsTogether(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var conns []net.Conn
	var connMu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			connMu.Lock()
			conns = append(conns, c)
			connMu.Unlock()
		}
	}()
	t.Cleanup(func() {
		connMu.Lock()
		defer connMu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://gw@"+ln.Addr().String()+"/none?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	l := NewLedger(&store.Store{Pool: pool}, nil)
	l.DBTimeout = 500 * time.Millisecond
	p := uuid.New()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = l.Hold(ctx, p, dec("0.1"))
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for i, err := range errs {
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("hold %d: %v", i, err)
		}
	}
	// One deadline each, one after another, would be 10 s.
	if elapsed > 4*time.Second {
		t.Fatalf("20 holds took %s to fail", elapsed)
	}
}

// BenchmarkCharge measures what durability adds at the end of one answer with no other load:
// go test ./core/billing -run x -bench Charge.
func BenchmarkCharge(b *testing.B) {
	ctx := context.Background()
	f := newFixture(b, "1000000")
	st, p, key := f.st, f.p, f.key
	l := NewLedger(st, nil)
	b.Cleanup(func() { _ = l.Close(ctx) })
	cost := dec("0.001")
	i := 0
	for b.Loop() {
		h, err := l.Hold(ctx, p, cost)
		if err != nil {
			b.Fatal(err)
		}
		r := record(p, fmt.Sprint("b", i), &cost)
		r.KeyID = key
		i++
		if _, err := l.Charge(ctx, h, r, "insufficient_balance"); err != nil {
			b.Fatal(err)
		}
	}
	s := l.Stats()
	b.ReportMetric(float64(s.WaitP50.Microseconds()), "p50-µs")
}

// A charge the replica gave up on (and whose answer it withheld) leaves a tombstone: the same
// charge committing late, e.g. delivered by a network that was frozen, takes nothing.
func TestAChargeGivenUpOnCannotLandLate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "1")
	if back, err := f.st.Refund(ctx, f.p, "late", "unavailable"); err != nil || !back.IsZero() {
		t.Fatalf("refund before the charge: %s %v", back, err)
	}
	res, err := f.st.Settle(ctx, uuid.New(), []store.Settlement{{Record: f.record("late", "0.5")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Charged[0].Valid {
		t.Fatalf("charged %s after the tombstone", res.Charged[0].Decimal)
	}
	var status string
	_ = f.st.Pool.QueryRow(ctx, `SELECT status FROM requests WHERE request_id = 'late'`).Scan(&status)
	if b := balanceOf(t, f.st, f.p); !b.Equal(dec("1")) || status != "unavailable" {
		t.Fatalf("balance %s, status %s", b, status)
	}
	// A later request is charged as usual.
	if res, err := f.st.Settle(ctx, uuid.New(), []store.Settlement{{Record: f.record("next", "0.5")}}); err != nil || !res.Charged[0].Decimal.Equal(dec("0.5")) {
		t.Fatalf("next: %v %v", res, err)
	}
	checkLedger(t, f.st, f.p)
}

// forwarder is a TCP proxy to the test database that can be taken down and brought back on
// the same address: the database "restarting" as the ledger sees it.
type forwarder struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func (f *forwarder) up(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.ln, f.addr = ln, ln.Addr().String()
	f.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d, err := net.Dial("tcp", f.target)
			if err != nil {
				c.Close()
				continue
			}
			f.mu.Lock()
			f.conns = append(f.conns, c, d)
			f.mu.Unlock()
			go func() { _, _ = io.Copy(d, c); d.Close() }()
			go func() { _, _ = io.Copy(c, d); c.Close() }()
		}
	}()
}

func (f *forwarder) down() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ln.Close()
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}

// At shutdown with the database down, the ledger keeps retrying its pending records until
// the deadline instead of dropping them after one failed attempt; the database coming back
// in time gets them all.
func TestCloseRetriesUntilTheDatabaseReturns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "1")
	u, err := url.Parse(storetest.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	// The fixture's database: same server, the fixture's own database name.
	var dbname string
	if err := f.st.Pool.QueryRow(ctx, `SELECT current_database()`).Scan(&dbname); err != nil {
		t.Fatal(err)
	}
	fw := &forwarder{addr: "127.0.0.1:0", target: u.Host}
	fw.up(t)
	t.Cleanup(fw.down)
	u.Host, u.Path = fw.addr, "/"+dbname
	pool, err := pgxpool.New(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	l := NewLedger(&store.Store{Pool: pool}, nil)
	l.DBTimeout = 300 * time.Millisecond
	for i := range 5 {
		l.Finish(nil, f.record(fmt.Sprint("late-", i), ""))
	}
	fw.down()
	closed := make(chan error, 1)
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	go func() { closed <- l.Close(cctx) }()
	time.Sleep(1500 * time.Millisecond) // several failed attempts
	select {
	case err := <-closed:
		t.Fatalf("Close gave up while the database was down: %v", err)
	default:
	}
	fw.up(t)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	var n int
	_ = f.st.Pool.QueryRow(ctx, `SELECT count(*) FROM requests WHERE profile_id = $1`, f.p).Scan(&n)
	if n != 5 {
		t.Fatalf("%d of 5 records settled", n)
	}
	checkLedger(t, f.st, f.p)
}

// BenchmarkSettleBatch measures the database's work per charge in a group commit of 32
// (one connection, one batch at a time: the time is the database's):
// go test ./core/billing -run x -bench SettleBatch.
func BenchmarkSettleBatch(b *testing.B) {
	ctx := context.Background()
	f := newFixture(b, "1000000")
	st, p, key := f.st, f.p, f.key
	replica := uuid.New()
	cost := dec("0.001")
	size := 32
	if v, err := strconv.Atoi(os.Getenv("BENCH_SETTLE_BATCH")); err == nil {
		size = v // BENCH_SETTLE_BATCH=1: what a transaction costs beyond its charges
	}
	// BENCH_SETTLE_KEYS=32: the batch's records spread over that many keys of the profile (a
	// batch of many clients), each a key_spend row and an api_keys lookup of its own.
	keys := []uuid.UUID{key}
	if v, err := strconv.Atoi(os.Getenv("BENCH_SETTLE_KEYS")); err == nil {
		for range v - 1 {
			k := uuid.New()
			if _, err := st.Pool.Exec(ctx, `INSERT INTO api_keys (id, profile_id, prefix, secret_hash) VALUES ($1, $2, 'x', $3)`, k, p, k[:]); err != nil {
				b.Fatal(err)
			}
			keys = append(keys, k)
		}
	}
	// One connection, so that its server process's CPU is the settlements' alone (without
	// the background writers and vacuum the descendants' CPU counts too).
	cfg := st.Pool.Config().Copy()
	cfg.MaxConns, cfg.MinConns = 1, 1
	one, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(one.Close)
	var backend int
	if err := one.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		b.Fatal(err)
	}
	st = &store.Store{Pool: one}
	batch := make([]store.Settlement, size)
	n := 0
	var wal0, wal1 int64
	walNow := `SELECT pg_current_wal_insert_lsn() - '0/0'`
	if err := one.QueryRow(ctx, walNow).Scan(&wal0); err != nil {
		b.Fatal(err)
	}
	cpu0, backend0 := descendantsCPU(), pidCPU(backend)
	for b.Loop() {
		for i := range batch {
			r := record(p, fmt.Sprint("gw-s", n), &cost) // a gateway-made id, as most are: no request_ids entry
			r.KeyID = keys[n%len(keys)]
			batch[i] = store.Settlement{Record: r}
			n++
		}
		if _, err := st.Settle(ctx, replica, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(n), "µs/charge")
	if cpu := descendantsCPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(n), "db-cpu-µs/charge")
	}
	if cpu := pidCPU(backend) - backend0; cpu > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(n), "backend-cpu-µs/charge")
	}
	// The write-ahead log the settlements wrote (the cluster's: the benchmark is its only
	// writer): a measure of their writes that the machine's load does not blur.
	if err := one.QueryRow(ctx, walNow).Scan(&wal1); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(wal1-wal0)/float64(n), "wal-B/charge")
}

// pidCPU is the CPU time (user and system) of one process so far; 0 without /proc.
func pidCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:])) // f[0] is field 3
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, _ := strconv.ParseInt(f[12], 10, 64) // field 15
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// descendantsCPU is the CPU time (user and system, of live processes and of reaped children)
// of this process's descendants: the throwaway PostgreSQL that storetest starts, when it is
// this process's; 0 without /proc.
func descendantsCPU() time.Duration {
	entries, _ := os.ReadDir("/proc")
	type proc struct{ ppid, ticks int64 }
	procs := map[int64]proc{}
	for _, e := range entries {
		pid, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(data[i+1:])) // f[0] is field 3
		if len(f) < 15 {
			continue
		}
		var v [5]int64
		for k, field := range []int{4, 14, 15, 16, 17} {
			v[k], _ = strconv.ParseInt(f[field-3], 10, 64)
		}
		procs[pid] = proc{ppid: v[0], ticks: v[1] + v[2] + v[3] + v[4]}
	}
	self := int64(os.Getpid())
	var ticks int64
	for pid, p := range procs {
		for a, hops := p.ppid, 0; a > 1 && hops < 4; a, hops = procs[a].ppid, hops+1 {
			if a == self {
				ticks += procs[pid].ticks
				break
			}
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// BenchmarkChargeConcurrent is the commit path at saturation without HTTP: 64 requests at
// once, each holding a little and charged more (usage beyond the estimate), as in make bench.
// BENCH_GROUP_WINDOW overrides the default window; BENCH_CHARGE_RATE=4000 paces the charges
// at that many a second, all goroutines together (a gateway below saturation, whose waits are
// the commits' own rather than the queue of a saturated machine):
// go test ./core/billing -run x -bench ChargeConcurrent -benchtime 20000x.
func BenchmarkChargeConcurrent(b *testing.B) {
	ctx := context.Background()
	f := newFixture(b, "1000000")
	st, p, key := f.st, f.p, f.key
	l := NewLedger(st, nil)
	l.SplitWaits = true
	if w, err := time.ParseDuration(os.Getenv("BENCH_GROUP_WINDOW")); err == nil {
		l.GroupWindow = w
	}
	b.Cleanup(func() { _ = l.Close(ctx) })
	hold, cost := dec("0.001"), dec("0.004")
	var next atomic.Int64
	var xact0 int64
	_ = st.Pool.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&xact0)
	cpu0 := descendantsCPU()
	// Pacing by slots on one clock (charge k starts at k/rate), not a ticker: a ticker drops
	// the ticks a late goroutine missed, and at 250 µs a tick the rate fell to a third.
	var period time.Duration
	var slot atomic.Int64
	if rate, err := strconv.Atoi(os.Getenv("BENCH_CHARGE_RATE")); err == nil && rate > 0 {
		period = time.Second / time.Duration(rate)
	}
	began := time.Now()
	b.SetParallelism(32) // 64 goroutines on 2 CPUs
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if period > 0 {
				if d := time.Until(began.Add(time.Duration(slot.Add(1)) * period)); d > 0 {
					time.Sleep(d)
				}
			}
			h, err := l.Hold(ctx, p, hold)
			if err != nil {
				b.Error(err)
				return
			}
			r := record(p, fmt.Sprint("gw-c", next.Add(1)), &cost) // a gateway-made id, as make bench's are: no request_ids entry
			r.KeyID = key
			if _, err := l.Charge(ctx, h, r, "insufficient_balance"); err != nil {
				b.Error(err)
				return
			}
		}
	})
	var xact1 int64
	_ = st.Pool.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&xact1)
	s := l.Stats()
	n := float64(next.Load())
	b.ReportMetric(n/b.Elapsed().Seconds(), "charges/s")
	b.ReportMetric(float64(s.WaitP50.Microseconds()), "wait-p50-µs")
	b.ReportMetric(float64(s.WaitP99.Microseconds()), "wait-p99-µs")
	b.ReportMetric(float64(s.TxP50.Microseconds()), "tx-p50-µs")
	b.ReportMetric(float64(s.QueueP50.Microseconds()), "queue-p50-µs")
	b.ReportMetric(float64(s.WakeP50.Microseconds()), "wake-p50-µs")
	b.ReportMetric(float64(s.CoverP50.Microseconds()), "cover-p50-µs")
	b.ReportMetric(float64(s.QueueP99.Microseconds()), "queue-p99-µs")
	b.ReportMetric(float64(xact1-xact0)/n, "xact/charge")
	b.ReportMetric(float64(s.Charges)/float64(max(s.Commits, 1)), "charges/commit")
	if cpu := descendantsCPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/n, "db-cpu-µs/charge")
	}
}
