package snapshot

import (
	"context"
	"testing"
	"time"
)

// Changed is one channel per snapshot: every caller before a reload gets the same one, the
// reload closes it, and the next caller gets a new, open one.
func TestChangedIsClosedByTheNextReload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, h := openHolder(t)
	first, again := h.Changed(), h.Changed()
	if first != again {
		t.Fatal("two callers before a reload got different channels: one would miss the change")
	}
	select {
	case <-first:
		t.Fatal("closed before any reload")
	default:
	}
	if err := h.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("the reload did not close the channel")
	}
	next := h.Changed()
	select {
	case <-next:
		t.Fatal("the channel after the reload is already closed")
	default:
	}
}
