package snapshot

import (
	"context"
	"testing"
	"time"

	"modelgateway/core/store"
	"modelgateway/core/store/storetest"
)

// Changed is one channel per snapshot: every caller before a reload gets the same one, the
// reload closes it, and the next caller gets a new, open one.
func TestChangedIsClosedByTheNextReload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, storetest.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := NewHolder(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
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
