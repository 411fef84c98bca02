package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"modelgateway/core/store"
)

// ReportAlive counts the replicas that reported within the window, itself included: a stale
// report does not count, a forgotten replica stops counting at once, a new one at its first
// report.
func TestReportAliveCountsLiveReplicas(t *testing.T) {
	t.Parallel()
	st, _ := open(t)
	ctx := context.Background()
	a, b, stale := uuid.New(), uuid.New(), uuid.New()
	report := func(id uuid.UUID) int {
		t.Helper()
		n, err := st.ReportAlive(ctx, id, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := report(a); n != 1 {
		t.Fatalf("alone: %d", n)
	}
	if _, err := st.Pool.Exec(ctx, `INSERT INTO replicas (id, seen_at) VALUES ($1, now() - interval '6 seconds')`, stale); err != nil {
		t.Fatal(err)
	}
	if n := report(a); n != 1 {
		t.Fatalf("beside a replica silent for 6 s: %d", n)
	}
	if n := report(b); n != 2 {
		t.Fatalf("b's first report: %d", n)
	}
	if n := report(a); n != 2 {
		t.Fatalf("a after b reported: %d", n)
	}
	if err := st.ForgetReplica(ctx, b); err != nil {
		t.Fatal(err)
	}
	if n := report(a); n != 1 {
		t.Fatalf("a after b stopped: %d", n)
	}
}

// max_tokens_per_minute is stored, updated on its own, and kept by a rotation.
func TestKeyTokenLimitIsStoredUpdatedAndRotated(t *testing.T) {
	t.Parallel()
	st, _ := open(t)
	ctx := context.Background()
	p, _ := st.CreateProfile(ctx, "p", "")
	k, err := st.CreateKey(ctx, &store.Key{ProfileID: p.ID, Name: "n", Prefix: "sk-gw-tttttt", SecretHash: make([]byte, 32),
		AllowedEndpoints: []string{"*"}, AllowedModels: []string{"*"}, MaxRPS: 3, MaxTPM: 1000})
	if err != nil || k.MaxTPM != 1000 || k.MaxRPS != 3 {
		t.Fatalf("created %+v %v", k, err)
	}
	tpm := int32(2500)
	if k, err = st.UpdateKey(ctx, k.ID, store.KeyUpdate{MaxTPM: &tpm}); err != nil || k.MaxTPM != 2500 || k.MaxRPS != 3 {
		t.Fatalf("updated %+v %v", k, err)
	}
	hash := make([]byte, 32)
	hash[0] = 2
	nk, err := st.RotateKey(ctx, k.ID, "sk-gw-uuuuuu", hash)
	if err != nil || nk.MaxTPM != 2500 || nk.MaxRPS != 3 {
		t.Fatalf("rotated %+v %v", nk, err)
	}
}
