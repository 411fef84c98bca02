package batches_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"modelgateway/core/gatewaytest"
)

// upload stores lines as a batch file of the key's profile.
func upload(t *testing.T, c openai.Client, lines ...string) string {
	t.Helper()
	f, err := c.Files.New(context.Background(), openai.FileNewParams{
		File: openai.File(strings.NewReader(strings.Join(lines, "\n")+"\n"), "in.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	return f.ID
}

func chatLine(id, model string) string {
	return fmt.Sprintf(`{"custom_id":%q,"method":"POST","url":"/v1/chat/completions","body":{"model":%q,"max_tokens":12,"messages":[{"role":"user","content":"hi"}]}}`, id, model)
}

// TestBatchCreateValidates: a bad input file gives a failed batch listing its bad lines and
// no item (request_counts.total 0); a good one is in_progress with one item per line.
func TestBatchCreateValidates(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartGen(t, gatewaytest.Options{Env: []string{"GATEWAY_BATCH_CONCURRENCY=0"}})
	ctx := context.Background()
	c := sdk(g, g.Key)
	// A key that may not use m-anthropic: an item naming it fails the batch at create time.
	k := g.Admin("POST", "/admin/v1/profiles/"+g.ProfileID+"/keys", `{"name":"n","allowed_endpoints":["batches","files","chat.completions"],"allowed_models":["m-openai"]}`)
	narrow := sdk(g, k["secret"].(string))

	good := upload(t, c, chatLine("a", "m-openai"), chatLine("b", "m-anthropic"))
	b, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: good, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h, Metadata: map[string]string{"job": "1"}})
	if err != nil {
		t.Fatalf("Batches.New: %v", err)
	}
	if !strings.HasPrefix(b.ID, "batch_") || b.RequestCounts.Total != 2 || b.InputFileID != good || b.Metadata["job"] != "1" || b.Endpoint != "/v1/chat/completions" {
		t.Fatalf("batch = %+v", b)
	}
	if b.Status != openai.BatchStatusInProgress {
		t.Fatalf("status %s, want in_progress", b.Status)
	}

	cases := []struct {
		name  string
		c     openai.Client
		lines []string
		code  string
	}{
		{"model not on the key", narrow, []string{chatLine("a", "m-openai"), chatLine("b", "m-anthropic")}, "model_not_allowed"},
		{"duplicate custom_id", c, []string{chatLine("a", "m-openai"), chatLine("a", "m-openai")}, "duplicate_custom_id"},
		{"url not the endpoint", c, []string{strings.Replace(chatLine("a", "m-openai"), "/v1/chat/completions", "/v1/embeddings", 1)}, "mismatched_endpoint"},
		{"not JSON", c, []string{chatLine("a", "m-openai"), "{oops"}, "invalid_json_line"},
		{"method GET", c, []string{strings.Replace(chatLine("a", "m-openai"), `"POST"`, `"GET"`, 1)}, "invalid_method"},
		{"unknown model", c, []string{chatLine("a", "nope")}, "model_not_found"},
	}
	for _, tc := range cases {
		file := upload(t, tc.c, tc.lines...)
		b, err := tc.c.Batches.New(ctx, openai.BatchNewParams{InputFileID: file, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
			CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
		if err != nil {
			t.Errorf("%s: create: %v", tc.name, err)
			continue
		}
		if b.Status != openai.BatchStatusFailed || len(b.Errors.Data) == 0 || b.Errors.Data[0].Code != tc.code || b.RequestCounts.Total != 0 || b.FailedAt == 0 {
			t.Errorf("%s: batch %s total %d errors %+v, want failed with %s", tc.name, b.Status, b.RequestCounts.Total, b.Errors.Data, tc.code)
		}
	}
	// Bad requests are refused outright: an unknown file (another profile's too), an endpoint
	// outside the five.
	other, _ := g.NewProfile("", "10")
	oc := sdk(g, other)
	if _, err := oc.Batches.New(ctx, openai.BatchNewParams{InputFileID: good, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h}); !isStatus(err, 404) {
		t.Errorf("another profile's file = %v, want 404", err)
	}
	if _, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: good, Endpoint: openai.BatchNewParamsEndpointV1Moderations,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h}); !isStatus(err, 400) {
		t.Errorf("moderations endpoint = %v, want 400", err)
	}
	if _, err := oc.Batches.Get(ctx, b.ID); !isStatus(err, 404) {
		t.Errorf("another profile's batch Get = %v, want 404", err)
	}
	if _, err := oc.Batches.Cancel(ctx, b.ID); !isStatus(err, 404) {
		t.Errorf("another profile's batch Cancel = %v, want 404", err)
	}
	// List: newest first, paged with after.
	var ids []string
	iter := c.Batches.ListAutoPaging(ctx, openai.BatchListParams{Limit: openai.Int(2)})
	for iter.Next() {
		ids = append(ids, iter.Current().ID)
	}
	if err := iter.Err(); err != nil || len(ids) != 7 || ids[6] != b.ID {
		t.Errorf("list = %v (%v), want 7 batches ending with %s", ids, err, b.ID)
	}
	// Cancel with no worker running: every item ends canceled, the batch cancelled, its
	// error file lists them.
	cb, err := c.Batches.Cancel(ctx, b.ID)
	if err != nil || cb.Status != openai.BatchStatusCancelled || cb.ErrorFileID == "" || cb.OutputFileID != "" || cb.RequestCounts.Failed != 2 {
		t.Fatalf("cancel = %+v, %v", cb, err)
	}
	resp, err := c.Files.Content(ctx, cb.ErrorFileID)
	if err != nil {
		t.Fatalf("error file: %v", err)
	}
	lines := readLines(t, resp)
	if len(lines) != 2 || lines[0]["custom_id"] != "a" || lines[0]["response"] != nil || lines[0]["error"].(map[string]any)["code"] != "batch_cancelled" {
		t.Errorf("error file lines = %v", lines)
	}
}
