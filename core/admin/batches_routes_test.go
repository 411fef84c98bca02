package admin_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"modelgateway/core/gatewaytest"
)

// ListProfileBatches over the admin HTTP route: a profile's batches newest first with their
// request counts, the totals of every batch of the range whatever page_size cuts, filtered by
// key and start time; another profile's list is empty; bad arguments get invalid_request.
func TestListProfileBatchesOverTheAdminRoute(t *testing.T) {
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	ctx := context.Background()
	oc := openai.NewClient(option.WithBaseURL(g.Base+"/v1/"), option.WithAPIKey(g.Key), option.WithMaxRetries(0))
	line := `{"custom_id":"%s","method":"POST","url":"/v1/chat/completions","body":{"model":"m-openai","max_tokens":12,"messages":[{"role":"user","content":"hi"}]}}`
	var ids []string
	for _, items := range [][]string{{"x1", "x2"}, {"y1"}} {
		var in strings.Builder
		for _, id := range items {
			in.WriteString(strings.Replace(line, "%s", id, 1) + "\n")
		}
		f, err := oc.Files.New(ctx, openai.FileNewParams{Purpose: openai.FilePurposeBatch, File: openai.File(strings.NewReader(in.String()), "in.jsonl", "application/jsonl")})
		if err != nil {
			t.Fatal(err)
		}
		b, err := oc.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
			CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, b.ID)
		gatewaytest.WaitFor(t, 60*time.Second, "batch completed", func() bool {
			got, err := oc.Batches.Get(ctx, b.ID)
			return err == nil && got.Status == openai.BatchStatusCompleted
		})
	}
	list := func(pid, query string) (batches []map[string]any, totals map[string]any) {
		t.Helper()
		out := g.Admin("GET", "/admin/v1/profiles/"+pid+"/batches?"+query, "")
		for _, b := range out["batches"].([]any) {
			batches = append(batches, b.(map[string]any))
		}
		totals, _ = out["totals"].(map[string]any)
		return batches, totals
	}
	// int64 fields are JSON strings (proto3 JSON); zero ones are left out.
	count := func(m map[string]any, field string) string {
		if v, ok := m[field].(string); ok {
			return v
		}
		return "0"
	}

	all, totals := list(g.ProfileID, "")
	if len(all) != 2 || all[0]["id"] != ids[1] || all[1]["id"] != ids[0] {
		t.Fatalf("batches %v, want %v newest first", all, ids)
	}
	if a := all[1]; a["api"] != "openai" || a["status"] != "completed" || count(a, "total") != "2" || count(a, "completed") != "2" ||
		count(a, "failed") != "0" || a["end_time"] == nil || a["create_time"] == nil || a["endpoint"] != "/v1/chat/completions" {
		t.Errorf("the first batch: %v", a)
	}
	if count(totals, "batches") != "2" || count(totals, "total") != "3" || count(totals, "completed") != "3" || count(totals, "running") != "0" {
		t.Errorf("totals %v", totals)
	}
	// page_size cuts the list, not the totals.
	if one, totals := list(g.ProfileID, "page_size=1"); len(one) != 1 || one[0]["id"] != ids[1] || count(totals, "batches") != "2" {
		t.Errorf("page_size=1: %v %v", one, totals)
	}
	// The key that made them, and another; a start after them.
	keyID := all[0]["key_id"].(string)
	if mine, _ := list(g.ProfileID, "key_id="+keyID); len(mine) != 2 {
		t.Errorf("key_id of their key: %v", mine)
	}
	other := g.Admin("POST", "/admin/v1/profiles/"+g.ProfileID+"/keys", `{"name":"other","allowed_endpoints":["*"],"allowed_models":["*"]}`)
	if none, totals := list(g.ProfileID, "key_id="+other["key"].(map[string]any)["id"].(string)); len(none) != 0 || count(totals, "batches") != "0" {
		t.Errorf("key_id of another key: %v %v", none, totals)
	}
	if none, _ := list(g.ProfileID, "start_time="+url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339))); len(none) != 0 {
		t.Errorf("start_time after them: %v", none)
	}
	// Another profile sees none of them.
	_, pid2 := g.NewProfile("", "1")
	if none, totals := list(pid2, ""); len(none) != 0 || count(totals, "batches") != "0" {
		t.Errorf("another profile: %v %v", none, totals)
	}

	for _, path := range []string{"/profiles/nope/batches", "/profiles/" + g.ProfileID + "/batches?page_size=-1", "/profiles/" + g.ProfileID + "/batches?key_id=nope"} {
		status, _, body := g.Do("GET", "/admin/v1"+path, gatewaytest.Bearer(gatewaytest.AdminToken), "")
		if e, _ := body["error"].(map[string]any); status != 400 || e["code"] != "invalid_request_error" {
			t.Errorf("%s: %d %v", path, status, body)
		}
	}
	status, _, body := g.Do("GET", "/admin/v1/profiles/00000000-0000-0000-0000-000000000001/batches", gatewaytest.Bearer(gatewaytest.AdminToken), "")
	if status != 404 {
		t.Errorf("an unknown profile: %d %v", status, body)
	}
}
