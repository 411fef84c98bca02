package batches_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"modelgateway/core/batchrun"
	"modelgateway/core/gatewaytest"
)

// TestBatchItemsYieldToLiveRequests: live requests go first (contract.md "Files and
// batches"). With no live traffic the replica's items start as fast as they finish; while a
// client's request is in flight, at most one starts each batchrun.DefaultTrickle, so that no
// more of them finish than that pace allows.
func TestBatchItemsYieldToLiveRequests(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartGen(t, gatewaytest.Options{Env: []string{"GATEWAY_BATCH_CONCURRENCY=4"}})
	ctx := context.Background()
	c := sdk(g, g.Key)
	const n = 300
	lines := make([]string, n)
	for i := range lines {
		lines[i] = chatLine(fmt.Sprintf("s%d", i), "m-openai")
	}
	file := upload(t, c, lines...)
	create := func() string {
		b, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: file, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
			CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
		if err != nil {
			t.Fatal(err)
		}
		return b.ID
	}
	get := func(id string) *openai.Batch {
		b, err := c.Batches.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	// No live traffic: far faster than the trickle.
	start := time.Now()
	id := create()
	for get(id).Status != openai.BatchStatusCompleted {
		if time.Since(start) > time.Minute {
			t.Fatalf("batch not completed: %+v", get(id).RequestCounts)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if took := time.Since(start); took >= n*batchrun.DefaultTrickle/2 {
		t.Fatalf("%d items took %s without live traffic: no faster than half the trickle's pace", n, took)
	}

	// A live request in flight for 3 s (another profile's): the trickle meanwhile.
	liveKey, _ := g.NewProfile("", "100")
	done := make(chan int, 1)
	go func() {
		status, _, _ := g.PostAs(liveKey, "/v1/chat/completions", nil,
			`{"model":"m-openai","max_tokens":12,"messages":[{"role":"user","content":"#sim:delay=3s"}]}`)
		done <- status
	}()
	time.Sleep(200 * time.Millisecond) // the live request is in
	start = time.Now()
	id = create()
	if status := <-done; status != http.StatusOK {
		t.Fatalf("live request: %d", status)
	}
	took := time.Since(start)
	got := get(id).RequestCounts.Completed
	if limit := int64(took/batchrun.DefaultTrickle) + 1; got > limit {
		t.Fatalf("%d items completed within %s beside a live request: faster than one each %s (at most %d)", got, took, batchrun.DefaultTrickle, limit)
	}
	t.Logf("beside a live request for %s: %d items completed", took.Round(time.Millisecond), got)
	// And once live traffic is over, the batch completes.
	for get(id).Status != openai.BatchStatusCompleted {
		if time.Since(start) > time.Minute {
			t.Fatalf("batch not completed after the live request: %+v", get(id).RequestCounts)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
