package bot_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"modelgateway/core/gatewaytest"
)

// The user's batches, read by the bot through the admin API alone: /usage adds up those of
// the last 7 days (of all keys or of one), the Mini App lists those of its 30 days with their
// request counts. Batch A (Anthropic's API, three requests, one of them for a model that does
// not exist) ends with 2 done and 1 failed; batch B (OpenAI's, one item) is moved 8 days
// back: out of /usage, still in the Mini App.
func TestBotShowsBatches(t *testing.T) {
	t.Parallel()
	m := startMiniApp(t)
	ctx := context.Background()
	ann := m.user(101, "Ann")
	pid := ann.do(t, 200, "GET", "/api/me", "")["profile"].(map[string]any)["id"].(string)
	m.e.Admin("POST", "/admin/v1/profiles/"+pid+":credit", `{"amount":"500","reason":"top-up","idempotency_key":"b-1"}`)
	k := m.e.Admin("POST", "/admin/v1/profiles/"+pid+"/keys", `{"name":"batcher","allowed_endpoints":["*"],"allowed_models":["*"]}`)
	secret := k["secret"].(string)
	m.e.Admin("POST", "/admin/v1/profiles/"+pid+"/keys", `{"name":"idle","allowed_endpoints":["*"],"allowed_models":["*"]}`)
	auth := map[string]string{"Authorization": "Bearer " + secret}

	// Batch A: Anthropic's message batch.
	status, _, a := m.e.Do("POST", "/v1/messages/batches", auth, `{"requests":[
		{"custom_id":"a1","params":{"model":"b-model","max_tokens":12,"messages":[{"role":"user","content":"hi"}]}},
		{"custom_id":"a2","params":{"model":"b-model","max_tokens":12,"messages":[{"role":"user","content":"hi"}]}},
		{"custom_id":"a3","params":{"model":"no-such-model","max_tokens":12,"messages":[{"role":"user","content":"hi"}]}}]}`)
	if status != 200 {
		t.Fatalf("message batch: %d %v", status, a)
	}
	aID := a["id"].(string)
	gatewaytest.WaitFor(t, 60*time.Second, "batch A ended", func() bool {
		_, _, got := m.e.Do("GET", "/v1/messages/batches/"+aID, auth, "")
		return got["processing_status"] == "ended"
	})
	// Batch B: OpenAI's, one item.
	oc := openai.NewClient(option.WithBaseURL(m.e.Base+"/v1/"), option.WithAPIKey(secret), option.WithMaxRetries(0))
	f, err := oc.Files.New(ctx, openai.FileNewParams{Purpose: openai.FilePurposeBatch, File: openai.File(strings.NewReader(
		`{"custom_id":"b1","method":"POST","url":"/v1/chat/completions","body":{"model":"b-model","max_tokens":12,"messages":[{"role":"user","content":"hi"}]}}`+"\n"),
		"b.jsonl", "application/jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := oc.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}
	gatewaytest.WaitFor(t, 60*time.Second, "batch B completed", func() bool {
		got, err := oc.Batches.Get(ctx, b.ID)
		return err == nil && got.Status == openai.BatchStatusCompleted
	})
	gatewaytest.Settled(t, m.e.Pool(), pid, 3)

	tg := m.h.user(101, "Ann")
	mustContain(t, "/usage with two batches", tg.say("/usage").Fields["text"], "Batches: 2 — 4 items: 3 done, 1 failed", "Total: 3 requests")
	if _, err := m.e.Pool().Exec(ctx, `UPDATE batches SET created_at = created_at - interval '8 days' WHERE id = $1`, b.ID); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "/usage with batch B 8 days back", tg.say("/usage").Fields["text"], "Batches: 1 — 3 items: 2 done, 1 failed")
	mustContain(t, "/usage batcher", tg.say("/usage batcher").Fields["text"], "key <b>batcher</b>", "Batches: 1 — 3 items: 2 done, 1 failed")
	if idle := tg.say("/usage idle").Fields["text"]; strings.Contains(idle, "Batches") || !strings.Contains(idle, "No requests") {
		t.Errorf("/usage of a key with no batch:\n%s", idle)
	}

	// The Mini App: both batches (its window is 30 days), newest first, with their counts.
	got := ann.do(t, 200, "GET", "/api/batches", "")
	raw, _ := json.Marshal(got)
	if got["count"] != float64(2) || got["total"] != float64(4) || got["done"] != float64(3) || got["failed"] != float64(1) || got["running"] != float64(0) {
		t.Fatalf("/api/batches totals: %s", raw)
	}
	list := got["batches"].([]any)
	if len(list) != 2 {
		t.Fatalf("/api/batches lists %d: %s", len(list), raw)
	}
	first, second := list[0].(map[string]any), list[1].(map[string]any)
	if first["id"] != aID || first["api"] != "anthropic" || first["status"] != "completed" || first["total"] != float64(3) ||
		first["done"] != float64(2) || first["failed"] != float64(1) || first["end_time"] == nil {
		t.Errorf("batch A in the Mini App: %v", first)
	}
	if second["id"] != b.ID || second["api"] != "openai" || second["endpoint"] != "/v1/chat/completions" || second["done"] != float64(1) {
		t.Errorf("batch B in the Mini App: %v", second)
	}
	// Another user sees none of them.
	if other := m.user(202, "Bo").do(t, 200, "GET", "/api/batches", ""); other["count"] != float64(0) || len(other["batches"].([]any)) != 0 {
		t.Errorf("another user's /api/batches: %v", other)
	}
}
