package batches_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/shopspring/decimal"

	"modelgateway/core/gatewaytest"
)

// waitBatch polls a batch until its status is final.
func waitBatch(t *testing.T, c openai.Client, id string) *openai.Batch {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, err := c.Batches.Get(context.Background(), id)
		if err != nil {
			t.Fatalf("Batches.Get: %v", err)
		}
		switch b.Status {
		case openai.BatchStatusCompleted, openai.BatchStatusFailed, openai.BatchStatusExpired, openai.BatchStatusCancelled:
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch %s still %s (%+v)", id, b.Status, b.RequestCounts)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// usage is the profile's request records by request id.
func usage(t *testing.T, g *gatewaytest.Gen, pid string) map[string]map[string]any {
	t.Helper()
	out := g.Admin("GET", "/admin/v1/profiles/"+pid+"/usage?page_size=1000", "")
	recs := map[string]map[string]any{}
	for _, r := range out["records"].([]any) {
		m := r.(map[string]any)
		recs[m["request_id"].(string)] = m
	}
	return recs
}

// withFactor re-applies the generation catalogue with m-openai's batch_price_factor.
func withFactor(g *gatewaytest.Gen, factor string) {
	doc := strings.Replace(gatewaytest.GenCatalog(g.Up.URL), `{"id": "m-openai", "family": "fam",`, `{"id": "m-openai", "family": "fam", "batch_price_factor": "`+factor+`",`, 1)
	g.Admin("POST", "/admin/v1/catalog:apply", doc)
}

// TestBatchRunsEveryItem: openai-go's flow (Files.New, Batches.New, Batches.Get until
// completed, Files.Content of the output file) on a passthrough model (m-openai) and a
// translated one (m-anthropic), a result per item; each item is a request record of its own,
// charged once at the model's prices times batch_price_factor; the ledger invariant holds.
func TestBatchRunsEveryItem(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	withFactor(g, "0.5")
	ctx := context.Background()
	c := sdk(g, g.Key)

	// A live request of the same body: the item costs half of it.
	status, _, raw := g.Post("/v1/chat/completions", nil, `{"model":"m-openai","max_tokens":12,"messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 {
		t.Fatalf("live request: %d %s", status, raw)
	}
	gatewaytest.Settled(t, g.Pool(), g.ProfileID, 1)

	lines := []string{chatLine("p1", "m-openai"), chatLine("t1", "m-anthropic"), chatLine("p2", "m-openai"), chatLine("t2", "m-anthropic")}
	file := upload(t, c, lines...)
	b, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: file, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatalf("Batches.New: %v", err)
	}
	done := waitBatch(t, c, b.ID)
	if done.Status != openai.BatchStatusCompleted || done.RequestCounts.Completed != 4 || done.RequestCounts.Failed != 0 || done.OutputFileID == "" || done.ErrorFileID != "" || done.CompletedAt == 0 {
		t.Fatalf("batch = %s %+v output %q error %q", done.Status, done.RequestCounts, done.OutputFileID, done.ErrorFileID)
	}
	resp, err := c.Files.Content(ctx, done.OutputFileID)
	if err != nil {
		t.Fatalf("output file: %v", err)
	}
	out := readLines(t, resp)
	if len(out) != 4 {
		t.Fatalf("output lines %d, want 4: %v", len(out), out)
	}
	balance := gatewaytest.Settled(t, g.Pool(), g.ProfileID, 5)
	recs := usage(t, g, g.ProfileID)
	var liveCost decimal.Decimal
	for id, r := range recs {
		if r["model"] == "m-openai" && !strings.Contains(id, b.ID) {
			liveCost = decimal.RequireFromString(r["cost"].(string))
		}
	}
	seen := map[string]bool{}
	for _, l := range out {
		cid := l["custom_id"].(string)
		seen[cid] = true
		r := l["response"].(map[string]any)
		body := r["body"].(map[string]any)
		if r["status_code"] != float64(200) || body["object"] != "chat.completion" || l["error"] != nil {
			t.Errorf("line %s = %v", cid, l)
			continue
		}
		rid := r["request_id"].(string)
		rec, ok := recs[rid]
		if !ok {
			t.Errorf("line %s: no request record %s", cid, rid)
			continue
		}
		if rec["batch_id"] != b.ID || rec["custom_id"] != cid {
			t.Errorf("record of %s names batch %v custom_id %v", cid, rec["batch_id"], rec["custom_id"])
		}
		if cid[0] == 'p' {
			if got := decimal.RequireFromString(rec["cost"].(string)); !got.Equal(liveCost.Div(decimal.NewFromInt(2))) || got.IsZero() {
				t.Errorf("item %s cost %s, want half of the live %s", cid, got, liveCost)
			}
		}
	}
	if len(seen) != 4 || len(recs) != 5 {
		t.Errorf("custom ids %v, %d records (want 4 items + 1 live)", seen, len(recs))
	}
	bal, sum, charges := gatewaytest.LedgerOf(t, g.Pool(), g.ProfileID)
	if !bal.Equal(sum) || bal.IsNegative() || charges != 5 || !bal.Equal(balance) {
		t.Errorf("ledger: balance %s, sum %s, %d charges (want 5)", bal, sum, charges)
	}
	_ = json.Valid
}

// TestBatchUpstreamFailureIsAnOutputLine: an upstream that answers 400 gives the item a
// response line with that status (the output file), not an error line; the item beside it
// succeeds; nothing is charged for the failed one.
func TestBatchUpstreamFailureIsAnOutputLine(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	c := sdk(g, g.Key)
	failing := strings.Replace(chatLine("bad", "m-anthropic"), `"content":"hi"`, `"content":"please fail #sim:fail=400"`, 1)
	b, err := c.Batches.New(context.Background(), openai.BatchNewParams{InputFileID: upload(t, c, failing, chatLine("ok", "m-anthropic")),
		Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}
	done := waitBatch(t, c, b.ID)
	if done.Status != openai.BatchStatusCompleted || done.RequestCounts.Completed != 2 || done.ErrorFileID != "" {
		t.Fatalf("batch = %s %+v error file %q", done.Status, done.RequestCounts, done.ErrorFileID)
	}
	resp, err := c.Files.Content(context.Background(), done.OutputFileID)
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]float64{}
	for _, l := range readLines(t, resp) {
		status[l["custom_id"].(string)] = l["response"].(map[string]any)["status_code"].(float64)
	}
	if status["bad"] != 400 || status["ok"] != 200 {
		t.Errorf("statuses %v, want bad 400 and ok 200", status)
	}
	gatewaytest.Settled(t, g.Pool(), g.ProfileID, 1)
}
