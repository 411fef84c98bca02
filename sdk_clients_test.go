package main

import (
	"context"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/shopspring/decimal"
	"google.golang.org/genai"
)

// The Go SDKs with what issue 14 added: a newer anthropic-version date, the Anthropic fields of
// the model list with the output limit, the input count in message_start, and the cost that
// streams show, read back through each SDK (and tolerated where the SDK has no field for it).
func TestGoSDKsReadWhatClientsNeed(t *testing.T) {
	g := startGen(t)
	ctx := context.Background()

	t.Run("anthropic: a newer version date, models.list fields, message_start input and message_delta cost", func(t *testing.T) {
		c := anthropicClient(g, anthropicopt.WithHeader("anthropic-version", "2026-10-21"))
		page, err := c.Models.List(ctx, anthropic.ModelListParams{})
		if err != nil {
			t.Fatal(err)
		}
		var limited *anthropic.ModelInfo
		for i, m := range page.Data {
			if m.DisplayName == "" || m.CreatedAt.IsZero() || m.Type != "model" {
				t.Errorf("model %s: display_name %q created_at %v type %q", m.ID, m.DisplayName, m.CreatedAt, m.Type)
			}
			if m.ID == "m-limited" {
				limited = &page.Data[i]
			}
		}
		if limited == nil || limited.MaxTokens != 100 || page.HasMore {
			t.Fatalf("m-limited %+v, has_more %v", limited, page.HasMore)
		}
		s := c.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "m-gemini", MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
		var startInput int64
		var cost string
		for s.Next() {
			switch ev := s.Current().AsAny().(type) {
			case anthropic.MessageStartEvent:
				startInput = ev.Message.Usage.InputTokens
			case anthropic.MessageDeltaEvent:
				cost = ev.Usage.JSON.ExtraFields["cost"].Raw()
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if startInput <= 0 {
			t.Errorf("message_start input_tokens %d", startInput)
		}
		if d, err := decimal.NewFromString(cost); err != nil || !d.IsPositive() {
			t.Errorf("message_delta usage.cost %q", cost)
		}
	})

	t.Run("openai: the final chunk's usage.cost and the output limit on the model", func(t *testing.T) {
		c := openaiClient(g)
		s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "m-anthropic",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		var cost, currency string
		for s.Next() {
			if u := s.Current().Usage; u.JSON.ExtraFields["cost"].Raw() != "" {
				cost, currency = u.JSON.ExtraFields["cost"].Raw(), u.JSON.ExtraFields["currency"].Raw()
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if d, err := decimal.NewFromString(cost); err != nil || !d.IsPositive() || currency != `"RUB"` {
			t.Errorf("usage.cost %q currency %s", cost, currency)
		}
		m, err := c.Models.Get(ctx, "m-limited")
		if err != nil {
			t.Fatal(err)
		}
		if got := m.JSON.ExtraFields["max_tokens"].Raw(); got != "100" {
			t.Errorf("max_tokens %q", got)
		}
	})

	t.Run("genai: a stream whose last chunk carries the cost still ends cleanly", func(t *testing.T) {
		c, err := genaiClient(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		var text string
		var last *genai.GenerateContentResponse
		for r, err := range c.Models.GenerateContentStream(ctx, "m-openai", genai.Text("hi"), nil) {
			if err != nil {
				t.Fatal(err)
			}
			text += r.Text()
			last = r
		}
		if text == "" || last == nil || last.UsageMetadata == nil || last.UsageMetadata.PromptTokenCount == 0 {
			t.Fatalf("text %q, last chunk %+v", text, last)
		}
	})
}
