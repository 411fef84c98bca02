package snapshot

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"modelgateway/core/keys"
	"modelgateway/core/store"
	"modelgateway/core/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// openHolder is a store on the test database and a holder loaded from it.
func openHolder(t *testing.T) (*store.Store, *Holder) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, storetest.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	h, err := NewHolder(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	return st, h
}

// A reload that read the database before a change must never land after the reload that
// follows the change: admin calls rely on "reloaded before answering".
func TestReloadNeverPutsAnOlderSnapshotBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, h := openHolder(t)
	p, err := st.CreateProfile(ctx, "p", "")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 { // background reloads, as NOTIFY and the periodic timer cause
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					_ = h.Reload(ctx)
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	for i := range 40 {
		secret := fmt.Sprintf("secret-%d", i)
		hash := keys.Hash(secret)
		if _, err := st.CreateKey(ctx, &store.Key{ProfileID: p.ID, Prefix: "x", SecretHash: hash[:], AllowedEndpoints: []string{"*"}, AllowedModels: []string{"*"}}); err != nil {
			t.Fatal(err)
		}
		if err := h.Reload(ctx); err != nil {
			t.Fatal(err)
		}
		if _, apiErr := h.Current().Authenticate(secret); apiErr != nil {
			t.Fatalf("key %d unknown right after its reload: %v", i, apiErr)
		}
	}
}
