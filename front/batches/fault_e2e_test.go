package batches_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/openai/openai-go/v3"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/simulator"
)

// slowGen is StartGen with an upstream that takes delay before answering.
func slowGen(t *testing.T, delay time.Duration, credit string, env ...string) *gatewaytest.Gen {
	t.Helper()
	up := gatewaytest.StartUpstream(t, simulator.Options{FirstByteDelay: delay})
	g := &gatewaytest.Gen{Gateway: gatewaytest.Start(t, gatewaytest.Options{Env: env}), Up: up}
	g.Admin("POST", "/admin/v1/catalog:apply", gatewaytest.GenCatalog(up.URL))
	g.Key, g.ProfileID = g.NewProfile("", credit)
	return g
}

func createBatch(t *testing.T, c openai.Client, lines []string) *openai.Batch {
	t.Helper()
	b, err := c.Batches.New(context.Background(), openai.BatchNewParams{InputFileID: upload(t, c, lines...),
		Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatalf("Batches.New: %v", err)
	}
	return b
}

func items(model string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = chatLine(fmt.Sprintf("i%d", i), model)
	}
	return out
}

// itemStates counts a batch's items by state.
func itemStates(t *testing.T, pool *pgxpool.Pool, batchID string) map[string]int {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT state, count(*) FROM batch_items WHERE batch_id = $1 GROUP BY state`, batchID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		out[s] = n
	}
	return out
}

// resultLines are the lines of a batch's output and error files, by custom_id; a custom_id
// twice fails the test.
func resultLines(t *testing.T, c openai.Client, b *openai.Batch) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, id := range []string{b.OutputFileID, b.ErrorFileID} {
		if id == "" {
			continue
		}
		resp, err := c.Files.Content(context.Background(), id)
		if err != nil {
			t.Fatalf("content of %s: %v", id, err)
		}
		for _, l := range readLines(t, resp) {
			cid := l["custom_id"].(string)
			if out[cid] != nil {
				t.Errorf("custom_id %s has two result lines", cid)
			}
			out[cid] = l
		}
	}
	return out
}

func errorCode(l map[string]any) string {
	if e, ok := l["error"].(map[string]any); ok {
		return e["code"].(string)
	}
	return ""
}

// TestBatchSurvivesKilledReplica: kill -9 of the replica running items; another replica on
// the database takes them over once their claims lapse. Every item ends once, each charged
// once (one charge per answered item, none for the attempts the dead replica left), and the
// ledger invariant holds.
func TestBatchSurvivesKilledReplica(t *testing.T) {
	t.Parallel()
	env := []string{"GATEWAY_BATCH_LEASE=1500ms", "GATEWAY_BATCH_CONCURRENCY=4"}
	a := slowGen(t, 2*time.Second, "1000", env...)
	c := sdk(a, a.Key)
	b := createBatch(t, c, items("m-openai", 8))
	// Items in flight: claimed in the database and sent upstream (a replica claims ahead of
	// its free slots, so a claim alone does not say that an item started).
	gatewaytest.WaitFor(t, 30*time.Second, "items running on the first replica", func() bool {
		return itemStates(t, a.Pool(), b.ID)["running"] > 0 && len(a.Up.Calls()) > 0
	})
	a.Kill()
	replica := gatewaytest.Start(t, gatewaytest.Options{Name: "second", DatabaseURL: a.DatabaseURL, Env: env})
	g2 := &gatewaytest.Gen{Gateway: replica, Up: a.Up, Key: a.Key, ProfileID: a.ProfileID}
	c2 := sdk(g2, a.Key)
	done := waitBatch(t, c2, b.ID)
	if done.Status != openai.BatchStatusCompleted || done.RequestCounts.Total != 8 || done.RequestCounts.Completed+done.RequestCounts.Failed != 8 {
		t.Fatalf("batch = %s %+v", done.Status, done.RequestCounts)
	}
	lines := resultLines(t, c2, done)
	answered := 0
	for cid, l := range lines {
		switch {
		case l["response"] != nil:
			answered++
		case errorCode(l) == "result_lost":
			// Charged by the dead replica's attempt and not run again.
			answered++
		default:
			t.Errorf("item %s: %v", cid, l)
		}
	}
	if len(lines) != 8 {
		t.Errorf("%d result lines, want 8", len(lines))
	}
	var retaken int
	if err := replica.Pool().QueryRow(context.Background(), `SELECT count(*) FROM batch_items WHERE batch_id = $1 AND attempts > 1`, b.ID).Scan(&retaken); err != nil || retaken == 0 {
		t.Errorf("%d items taken over from the dead replica (%v), want some", retaken, err)
	}
	gatewaytest.Settled(t, replica.Pool(), a.ProfileID, answered)
	time.Sleep(time.Second) // a second charge of some item would have landed by now
	bal, sum, charges := gatewaytest.LedgerOf(t, replica.Pool(), a.ProfileID)
	if charges != answered || !bal.Equal(sum) || bal.IsNegative() {
		t.Errorf("ledger: %d charges for %d answered items, balance %s, sum %s", charges, answered, bal, sum)
	}
}

// TestBatchCancelStopsUnstarted: cancel while one item runs; the running item finishes and is
// charged, every unstarted one ends canceled and costs nothing; the batch ends cancelled.
func TestBatchCancelStopsUnstarted(t *testing.T) {
	t.Parallel()
	g := slowGen(t, 1500*time.Millisecond, "1000", "GATEWAY_BATCH_CONCURRENCY=1")
	c := sdk(g, g.Key)
	b := createBatch(t, c, items("m-openai", 5))
	// The first item reached the upstream (the replica holds the other four claimed and
	// unstarted: they are what the cancel stops).
	gatewaytest.WaitFor(t, 30*time.Second, "an item running", func() bool { return len(g.Up.Calls()) == 1 })
	cb, err := c.Batches.Cancel(context.Background(), b.ID)
	if err != nil || cb.Status != openai.BatchStatusCancelling || cb.CancellingAt == 0 {
		t.Fatalf("cancel = %v %+v", err, cb)
	}
	done := waitBatch(t, c, b.ID)
	if done.Status != openai.BatchStatusCancelled || done.RequestCounts.Completed != 1 || done.RequestCounts.Failed != 4 || done.CancelledAt == 0 {
		t.Fatalf("batch = %s %+v", done.Status, done.RequestCounts)
	}
	canceled := 0
	for _, l := range resultLines(t, c, done) {
		if errorCode(l) == "batch_cancelled" {
			canceled++
		}
	}
	if canceled != 4 {
		t.Errorf("%d canceled lines, want 4", canceled)
	}
	gatewaytest.Settled(t, g.Pool(), g.ProfileID, 1)
	time.Sleep(500 * time.Millisecond)
	if _, _, charges := gatewaytest.LedgerOf(t, g.Pool(), g.ProfileID); charges != 1 {
		t.Errorf("%d charges, want 1 (the item that ran)", charges)
	}
}

// TestBatchExpires: with a short window, the items not done within it end expired and cost
// nothing; the ones that ran are charged; the batch ends expired.
func TestBatchExpires(t *testing.T) {
	t.Parallel()
	g := slowGen(t, time.Second, "1000", "GATEWAY_BATCH_CONCURRENCY=1", "GATEWAY_BATCH_WINDOW=2500ms")
	c := sdk(g, g.Key)
	b := createBatch(t, c, items("m-openai", 6))
	done := waitBatch(t, c, b.ID)
	ran := int(done.RequestCounts.Completed)
	if done.Status != openai.BatchStatusExpired || ran == 0 || ran >= 6 || done.ExpiredAt == 0 {
		t.Fatalf("batch = %s %+v", done.Status, done.RequestCounts)
	}
	expired := 0
	for _, l := range resultLines(t, c, done) {
		if errorCode(l) == "batch_expired" {
			expired++
		}
	}
	if expired != 6-ran {
		t.Errorf("%d expired lines, want %d", expired, 6-ran)
	}
	gatewaytest.Settled(t, g.Pool(), g.ProfileID, ran)
}

// TestBatchInsufficientBalanceMidBatch: the balance pays for two items of m-money; the rest
// fail with insufficient_balance in the error file, the batch goes on to completed, and
// nothing is spent beyond the balance.
func TestBatchInsufficientBalanceMidBatch(t *testing.T) {
	t.Parallel()
	g := slowGen(t, 0, "0.03", "GATEWAY_BATCH_CONCURRENCY=1")
	c := sdk(g, g.Key)
	lines := make([]string, 5)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"custom_id":"m%d","method":"POST","url":"/v1/chat/completions","body":%s}`, i, gatewaytest.MoneyBody)
	}
	done := waitBatch(t, c, createBatch(t, c, lines).ID)
	if done.Status != openai.BatchStatusCompleted || done.RequestCounts.Completed != 2 || done.RequestCounts.Failed != 3 {
		t.Fatalf("batch = %s %+v", done.Status, done.RequestCounts)
	}
	refused := 0
	for _, l := range resultLines(t, c, done) {
		if errorCode(l) == "insufficient_balance" && l["response"] == nil {
			refused++
		}
	}
	if refused != 3 {
		t.Errorf("%d insufficient_balance lines, want 3", refused)
	}
	bal := gatewaytest.Settled(t, g.Pool(), g.ProfileID, 2)
	if bal.String() != "0.006" {
		t.Errorf("balance %s, want 0.006 (0.03 less two charges of 0.012)", bal)
	}
}
