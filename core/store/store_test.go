package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/shopspring/decimal"

	"modelgateway/core/store"
	"modelgateway/core/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func open(t *testing.T) (*store.Store, string) {
	t.Helper()
	url := storetest.DatabaseURL(t)
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st, url
}

func tableCount(t *testing.T, st *store.Store) int {
	t.Helper()
	var n int
	if err := st.Pool.QueryRow(context.Background(), `
		SELECT count(*) FROM information_schema.tables
		WHERE table_schema = 'public' AND table_name <> 'schema_migrations'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMigrationsRunUpDownUp(t *testing.T) {
	t.Parallel()
	st, url := open(t)
	ctx := context.Background()
	if n := tableCount(t, st); n < 10 {
		t.Fatalf("migrated template has %d tables", n)
	}
	if err := store.MigrateDown(ctx, url); err != nil {
		t.Fatalf("down: %v", err)
	}
	if n := tableCount(t, st); n != 0 {
		t.Fatalf("after down %d tables remain", n)
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if _, err := st.CreateProfile(ctx, "after", ""); err != nil {
		t.Fatalf("schema unusable after up/down/up: %v", err)
	}
	// A second Migrate is a no-op, as every replica's start-up runs it.
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatalf("idempotent up: %v", err)
	}
}

// Concurrent credits with a mix of fresh and replayed idempotency keys: each key credits once,
// and balance = sum(entries) holds at the end.
func TestCreditsAreIdempotentUnderConcurrency(t *testing.T) {
	t.Parallel()
	st, _ := open(t)
	ctx := context.Background()
	p, err := st.CreateProfile(ctx, "p", "")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Go(func() {
			// 25 distinct keys, each sent 4 times at once.
			_, err := st.CreditProfile(ctx, p.ID, decimal.RequireFromString("0.000000001"), "t", fmt.Sprintf("k%d", i%25))
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		// A replay racing the first insert may see the unique violation; it must not credit.
		if !errors.Is(err, store.ErrAlreadyExists) {
			t.Errorf("credit: %v", err)
		}
	}
	got, err := st.GetProfile(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := st.LedgerSum(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := decimal.RequireFromString("0.000000025")
	if !got.Balance.Equal(want) || !sum.Equal(want) {
		t.Errorf("balance %s, sum(entries) %s, want %s", got.Balance, sum, want)
	}
}

func TestAdjustmentCannotMakeBalanceNegative(t *testing.T) {
	t.Parallel()
	st, _ := open(t)
	ctx := context.Background()
	p, _ := st.CreateProfile(ctx, "p", "")
	if _, err := st.CreditProfile(ctx, p.ID, decimal.RequireFromString("5"), "", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreditProfile(ctx, p.ID, decimal.RequireFromString("-5.000000001"), "", "b"); !errors.Is(err, store.ErrNegativeBalance) {
		t.Fatalf("overdrawing adjustment: %v", err)
	}
	res, err := st.CreditProfile(ctx, p.ID, decimal.RequireFromString("-5"), "", "c")
	if err != nil || !res.Profile.Balance.IsZero() {
		t.Fatalf("exact adjustment: %v %v", res, err)
	}
	if sum, _ := st.LedgerSum(ctx, p.ID); !sum.IsZero() {
		t.Errorf("sum(entries) = %s after refused adjustment", sum)
	}
}

func TestRotateKeepsPolicyAndRevokesOld(t *testing.T) {
	t.Parallel()
	st, _ := open(t)
	ctx := context.Background()
	p, _ := st.CreateProfile(ctx, "p", "")
	old, err := st.CreateKey(ctx, &store.Key{ProfileID: p.ID, Name: "n", Prefix: "sk-gw-aaaaaa", SecretHash: make([]byte, 32),
		AllowedEndpoints: []string{"messages"}, AllowedModels: []string{"m"}})
	if err != nil {
		t.Fatal(err)
	}
	hash := make([]byte, 32)
	hash[0] = 1
	nk, err := st.RotateKey(ctx, old.ID, "sk-gw-bbbbbb", hash)
	if err != nil {
		t.Fatal(err)
	}
	if nk.ID == old.ID || nk.AllowedModels[0] != "m" || nk.AllowedEndpoints[0] != "messages" || nk.State != store.KeyActive {
		t.Errorf("replacement %+v", nk)
	}
	if got, _ := st.GetKey(ctx, old.ID); got.State != store.KeyRevoked {
		t.Errorf("old key state %s", got.State)
	}
	if _, err := st.RotateKey(ctx, old.ID, "sk-gw-cccccc", make([]byte, 32)); !errors.Is(err, store.ErrKeyRevoked) {
		t.Errorf("rotating a revoked key: %v", err)
	}
	if _, err := st.UpdateKey(ctx, old.ID, store.KeyUpdate{AllowedModels: []string{"x"}}); !errors.Is(err, store.ErrKeyRevoked) {
		t.Errorf("updating a revoked key: %v", err)
	}
}
