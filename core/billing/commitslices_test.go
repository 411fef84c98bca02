package billing

import (
	"context"
	"reflect"
	"testing"
	"time"

	"modelgateway/core/store"
)

// The committer's slices (the group's charges, its settlements) serve commit after commit
// and, between commits, hold no charge or record: a charge goes back to its pool when its
// waiter has read its outcome, and a record's strings are the request's. Every charge is
// still durable once and the ledger exact.
func TestCommitsUseTheirSlicesAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "100")
	l := NewLedger(f.st, nil)
	l.GroupWindow = time.Millisecond
	t.Cleanup(func() { _ = l.Close(ctx) })
	const workers, each = 16, 10
	chargeConcurrently(t, l, f, workers, each, "slices-", nil)
	// One more, alone, so that the committer has finished with the groups before.
	h, err := l.Hold(ctx, f.p, dec("0.01"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Charge(ctx, h, f.record("slices-last", "0.01"), "insufficient_balance"); err != nil {
		t.Fatal(err)
	}
	if s := l.Stats(); s.Charges != workers*each+1 || s.Commits < 2 {
		t.Fatalf("%d charges in %d commits", s.Charges, s.Commits)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		spare := l.spareCharges
		l.mu.Unlock()
		if spare != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond) // the committer hands the last group's slice back after waking it
	}
	l.mu.Lock()
	spare, sts := l.spareCharges, l.settlements
	l.mu.Unlock()
	if cap(spare) == 0 || cap(sts) == 0 {
		t.Fatalf("no slices kept for the next commit: charges %d, settlements %d", cap(spare), cap(sts))
	}
	for i, c := range spare[:cap(spare)] {
		if c != nil {
			t.Fatalf("the kept charges slice holds charge %d", i)
		}
	}
	for i, st := range sts[:cap(sts)] {
		if !reflect.DeepEqual(st, store.Settlement{}) {
			t.Fatalf("the kept settlements slice holds record %d (%s)", i, st.Record.RequestID)
		}
	}
	if b := balanceOf(t, f.st, f.p); !b.Equal(dec("98.39")) {
		t.Fatalf("balance %s, want 98.39", b)
	}
	checkLedger(t, f.st, f.p)
}
