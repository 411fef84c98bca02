package billing

import (
	"context"
	"errors"
	"testing"
	"time"

	"modelgateway/core/wire/clock"
)

// leaseExpiry is the replica's lease row on the profile: its expiry, and whether it exists.
func (f *fixture) leaseExpiry(t *testing.T, l *Ledger) (time.Time, bool) {
	t.Helper()
	var exp time.Time
	err := f.st.Pool.QueryRow(context.Background(), `SELECT expires_at FROM balance_leases WHERE profile_id = $1 AND replica_id = $2`, f.p, l.Replica).Scan(&exp)
	if err != nil {
		return time.Time{}, false
	}
	return exp, true
}

// Lease maintenance: a lease in use is renewed (its row's expiry moves on and the replica
// keeps using it), one idle for longer than Idle with nothing held is returned (its row goes),
// and one the database no longer has is not used again without a growth that checks the
// balance.
func TestLeaseMaintenance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "10")
	l := NewLedger(f.st, nil)
	t.Cleanup(func() { _ = l.Close(ctx) })

	h, err := l.Hold(ctx, f.p, dec("1"))
	if err != nil {
		t.Fatal(err)
	}
	first, ok := f.leaseExpiry(t, l)
	if !ok {
		t.Fatal("no lease row after a hold")
	}
	l.mu.Lock()
	deadline := l.accounts[f.p].deadline
	l.mu.Unlock()
	if err := l.maintainLeases(ctx); err != nil {
		t.Fatal(err)
	}
	renewed, ok := f.leaseExpiry(t, l)
	l.mu.Lock()
	later := l.accounts[f.p].deadline
	l.mu.Unlock()
	if !ok || !renewed.After(first) || later <= deadline {
		t.Fatalf("a lease in use was not renewed: row %v -> %v (present %v), deadline %v -> %v", first, renewed, ok, deadline, later)
	}

	// Held, it is not returned however long unused.
	l.Idle = time.Millisecond
	time.Sleep(5 * time.Millisecond)
	if err := l.maintainLeases(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.leaseExpiry(t, l); !ok {
		t.Fatal("a lease with a hold on it was returned")
	}
	// Released and idle past Idle: returned.
	l.mu.Lock()
	l.release(h)
	l.mu.Unlock()
	time.Sleep(5 * time.Millisecond)
	if err := l.maintainLeases(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.leaseExpiry(t, l); ok {
		t.Fatal("an idle lease was not returned")
	}
	leased, err := f.st.Leased(ctx, f.p)
	if err != nil || !leased.IsZero() {
		t.Fatalf("leased %s after the return, %v", leased, err)
	}

	// A lease the database lost (expired, or removed by an operator) is checked again.
	l.Idle = time.Hour
	if _, err := l.Hold(ctx, f.p, dec("1")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Pool.Exec(ctx, `DELETE FROM balance_leases WHERE profile_id = $1`, f.p); err != nil {
		t.Fatal(err)
	}
	if err := l.maintainLeases(ctx); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	free := l.accounts[f.p].free(clock.Mono()).dec()
	l.mu.Unlock()
	if !free.IsZero() {
		t.Fatalf("%s of a lease the database no longer has is still used", free)
	}
}

// Run renews leases on its own, every LeaseTTL/5.
func TestRunRenewsLeases(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	f := newFixture(t, "10")
	l := NewLedger(f.st, nil) // the real 5 s: a renewal every second, each good for 3.75 s
	t.Cleanup(func() { cancel(); _ = l.Close(context.Background()) })
	if _, err := l.Hold(ctx, f.p, dec("1")); err != nil {
		t.Fatal(err)
	}
	first, _ := f.leaseExpiry(t, l)
	go l.Run(ctx)
	// The expiry moves on by a whole TTL: renewed for five periods (and the sweep has run).
	bound := time.Now().Add(60 * time.Second)
	for {
		if exp, ok := f.leaseExpiry(t, l); ok && exp.Sub(first) >= l.LeaseTTL {
			break
		}
		if time.Now().After(bound) {
			t.Fatal("Run did not renew the lease in use")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Covers answers whether a hold would be granted and keeps nothing.
func TestCoversKeepsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "1")
	l := NewLedger(f.st, nil)
	t.Cleanup(func() { _ = l.Close(ctx) })
	if err := l.Covers(ctx, f.p, dec("1.000000001")); !errors.Is(err, ErrInsufficient) {
		t.Fatalf("covering more than the balance: %v", err)
	}
	for range 3 {
		if err := l.Covers(ctx, f.p, dec("1")); err != nil {
			t.Fatalf("covering the balance: %v", err)
		}
	}
	if _, err := l.Hold(ctx, f.p, dec("1")); err != nil {
		t.Fatalf("the whole balance after three covers: %v", err)
	}
	if err := l.Covers(ctx, f.p, dec("0.000000001")); !errors.Is(err, ErrInsufficient) {
		t.Fatalf("covering beyond a hold of the whole balance: %v", err)
	}
}
