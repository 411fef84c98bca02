package store_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"testing"
	"time"

	"modelgateway/core/store"
)

// TestClaimBatchItemsConcurrently: replicas claiming at once (FOR UPDATE SKIP LOCKED) take
// every item exactly once; a claim older than the lease is taken again under a new request
// id naming the old one, and a finish by the old attempt then records nothing.
func TestClaimBatchItemsConcurrently(t *testing.T) {
	t.Parallel()
	st, _ := open(t)
	ctx := context.Background()
	p, err := st.CreateProfile(ctx, "batches", "")
	if err != nil {
		t.Fatal(err)
	}
	hash := make([]byte, 32)
	_, _ = rand.Read(hash)
	k, err := st.CreateKey(ctx, &store.Key{ProfileID: p.ID, Name: "n", Prefix: "sk-gw-bbbbbb", SecretHash: hash,
		AllowedEndpoints: []string{"*"}, AllowedModels: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	i := 0
	b, err := st.CreateBatch(ctx, &store.Batch{ID: store.NewObjectID("batch_"), API: "openai", Endpoint: "/v1/chat/completions",
		CompletionWindow: "24h", ProfileID: p.ID, KeyID: k.ID, ExpiresAt: time.Now().Add(time.Hour)},
		func() (*store.BatchItem, bool, error) {
			if i == n {
				return nil, false, nil
			}
			i++
			return &store.BatchItem{CustomID: fmt.Sprint(i), Model: "m", Body: []byte(`{}`)}, true, nil
		})
	if err != nil || b.Total != n {
		t.Fatalf("create: %v %+v", err, b)
	}
	var mu sync.Mutex
	seen := map[int]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := st.ClaimBatchItems(ctx, 7, time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, it := range got {
					seen[it.Idx]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for idx := range n {
		if seen[idx] != 1 {
			t.Fatalf("item %d claimed %d times", idx, seen[idx])
		}
	}
	// Every claim is fresh: none is taken again within the lease.
	if again, err := st.ClaimBatchItems(ctx, 10, time.Hour); err != nil || len(again) != 0 {
		t.Fatalf("claimed again within the lease: %d %v", len(again), err)
	}
	time.Sleep(20 * time.Millisecond)
	again, err := st.ClaimBatchItems(ctx, 1, 10*time.Millisecond)
	if err != nil || len(again) != 1 {
		t.Fatalf("lapsed claim not taken over: %d %v", len(again), err)
	}
	it := again[0]
	if it.Attempts != 2 || it.PreviousRequestID == "" || it.RequestID == it.PreviousRequestID {
		t.Fatalf("taken over item = %+v", it)
	}
	old := *it
	old.RequestID = it.PreviousRequestID
	if err := st.FinishBatchItem(ctx, &old, &store.ItemResult{Outcome: store.OutcomeResponse, StatusCode: 200, Response: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.GetBatch(ctx, p.ID, "openai", b.ID); got.Completed != 0 {
		t.Fatalf("the old attempt's finish counted: %+v", got)
	}
	if err := st.FinishBatchItem(ctx, it, &store.ItemResult{Outcome: store.OutcomeResponse, StatusCode: 200, Response: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.GetBatch(ctx, p.ID, "openai", b.ID); got.Completed != 1 {
		t.Fatalf("the new attempt's finish did not count: %+v", got)
	}
}
