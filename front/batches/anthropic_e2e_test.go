package batches_test

import (
	"context"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/option"

	"modelgateway/core/gatewaytest"
)

func claude(g *gatewaytest.Gen, key string) anthropic.Client {
	return anthropic.NewClient(anthropicopt.WithBaseURL(g.Base+"/"), anthropicopt.WithAPIKey(key), anthropicopt.WithMaxRetries(0))
}

func msgRequest(id, model string) anthropic.MessageBatchNewParamsRequest {
	return anthropic.MessageBatchNewParamsRequest{CustomID: id, Params: anthropic.MessageBatchNewParamsRequestParams{
		Model: anthropic.Model(model), MaxTokens: 12,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	}}
}

// TestMessageBatchesSDK: anthropic-sdk-go's flow (Messages.Batches.New, Get until ended,
// ResultsStreaming) on a passthrough model (m-anthropic) and a translated one (m-openai), a
// succeeded result per request; a request the key may not make is its errored result, not a
// refusal of the batch; another profile's key gets 404; an ended batch can be deleted.
func TestMessageBatchesSDK(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	ctx := context.Background()
	c := claude(g, g.Key)
	b, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: []anthropic.MessageBatchNewParamsRequest{
		msgRequest("pass", "m-anthropic"), msgRequest("trans", "m-openai"), msgRequest("bad", "no-such-model")}})
	if err != nil {
		t.Fatalf("Batches.New: %v", err)
	}
	if b.Type != "message_batch" || b.RequestCounts.Processing != 3 || !b.EndedAt.IsZero() || b.ResultsURL != "" {
		t.Fatalf("new batch = %+v", b)
	}
	oc := claude(g, mustOther(g))
	if _, err := oc.Messages.Batches.Get(ctx, b.ID, anthropic.MessageBatchGetParams{}); !isAnthropicStatus(err, 404) {
		t.Errorf("another profile's Get = %v, want 404", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for b.ProcessingStatus != anthropic.MessageBatchProcessingStatusEnded {
		if time.Now().After(deadline) {
			t.Fatalf("batch still %s", b.ProcessingStatus)
		}
		time.Sleep(100 * time.Millisecond)
		if b, err = c.Messages.Batches.Get(ctx, b.ID, anthropic.MessageBatchGetParams{}); err != nil {
			t.Fatalf("Get: %v", err)
		}
	}
	if b.RequestCounts.Succeeded != 2 || b.RequestCounts.Errored != 1 || b.RequestCounts.Processing != 0 || b.EndedAt.IsZero() ||
		b.ResultsURL != g.Base+"/v1/messages/batches/"+b.ID+"/results" {
		t.Fatalf("ended batch = %+v", b)
	}
	stream := c.Messages.Batches.ResultsStreaming(ctx, b.ID, anthropic.MessageBatchResultsParams{})
	got := map[string]anthropic.MessageBatchIndividualResponse{}
	for stream.Next() {
		got[stream.Current().CustomID] = stream.Current()
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("results: %v", err)
	}
	for _, id := range []string{"pass", "trans"} {
		r := got[id].Result
		if r.Type != "succeeded" || r.Message.Type != "message" || len(r.Message.Content) == 0 || r.Message.Usage.OutputTokens == 0 {
			t.Errorf("%s: %+v", id, r)
		}
	}
	if r := got["bad"].Result; r.Type != "errored" || r.Error.Error.Message == "" {
		t.Errorf("bad: %+v", r)
	}
	gatewaytest.Settled(t, g.Pool(), g.ProfileID, 2)
	del, err := c.Messages.Batches.Delete(ctx, b.ID, anthropic.MessageBatchDeleteParams{})
	if err != nil || del.ID != b.ID {
		t.Fatalf("Delete = %+v, %v", del, err)
	}
	if _, err := c.Messages.Batches.Get(ctx, b.ID, anthropic.MessageBatchGetParams{}); !isAnthropicStatus(err, 404) {
		t.Errorf("deleted batch Get = %v, want 404", err)
	}
}

func mustOther(g *gatewaytest.Gen) string {
	k, _ := g.NewProfile("", "10")
	return k
}

func isAnthropicStatus(err error, status int) bool {
	e, ok := err.(*anthropic.Error)
	return ok && e.StatusCode == status
}
