package billing

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBatchChargesShareACommit: the charges of the batch items running on a replica wait for
// each other and commit together, each item told when its charge is queued (it then no
// longer counts as running, as core/batchrun frees its slot); a live request's charge never
// waits for them; a batch charge whose siblings do not come waits no longer than BatchWindow.
func TestBatchChargesShareACommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "10")
	l := NewLedger(f.st, nil)
	t.Cleanup(func() { _ = l.Close(ctx) })
	l.BatchWindow = 3 * time.Second
	var running atomic.Int64
	running.Store(4)
	var queued sync.Map
	l.SetBatchRunning(running.Load, func(id string) { queued.Store(id, true); running.Add(-1) })
	charge := func(id string, batch bool) time.Duration {
		h, err := l.Hold(ctx, f.p, dec("0.1"))
		if err != nil {
			t.Error(err)
			return 0
		}
		start := time.Now()
		if _, _, err := l.charge(ctx, h, f.record(id, "0.1"), "insufficient_balance", batch); err != nil {
			t.Error(err)
		}
		return time.Since(start)
	}

	// Four batch items arriving 50 ms apart: one commit, and no wait for the window once the
	// fourth is in.
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); charge(fmt.Sprint("b", i), true) }()
		time.Sleep(50 * time.Millisecond)
	}
	wg.Wait()
	if took, commits := time.Since(start), l.Stats().Commits; commits != 1 || took > 2*time.Second {
		t.Fatalf("4 batch charges: %d commits in %s, want 1 commit well within the window", commits, took)
	}

	for i := range 4 {
		if _, ok := queued.Load(fmt.Sprint("b", i)); !ok {
			t.Errorf("batch charge b%d was not reported queued", i)
		}
	}

	// A live charge while batch items run (none of them charging): it commits at once, and
	// is not reported as a batch item's.
	running.Store(4)
	if took := charge("live", false); took > time.Second || l.Stats().Commits != 2 {
		t.Errorf("a live charge waited %s (%d commits): live requests must not wait for batch items", took, l.Stats().Commits)
	}

	if _, ok := queued.Load("live"); ok {
		t.Error("a live charge was reported as a batch item's")
	}

	// A batch charge whose siblings never come waits the window, and no longer.
	l.BatchWindow = 300 * time.Millisecond
	if took := charge("alone", true); took < 250*time.Millisecond || took > 2*time.Second || l.Stats().Commits != 3 {
		t.Errorf("a lone batch charge took %s (%d commits), want about the window of 300ms", took, l.Stats().Commits)
	}
	checkLedger(t, f.st, f.p)
}
