package simulator

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// The official anthropic-sdk-go, pointed at the simulator, must read every answer.

func anthropicClient(t *testing.T, o Options) (*Simulator, anthropic.Client) {
	t.Helper()
	sim, url := start(t, o)
	return sim, anthropic.NewClient(option.WithBaseURL(url+"/"), option.WithAPIKey("sk-ant-test"), option.WithMaxRetries(0))
}

var weatherTool = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
	Name: "get_weather",
	InputSchema: anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}},
		Required:   []string{"city", "days"},
	},
}}

func textOfMessage(m *anthropic.Message) string {
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func TestAnthropicMessages(t *testing.T) {
	t.Parallel()
	_, c := anthropicClient(t, Options{})
	params := anthropic.MessageNewParams{
		Model:     "sim-claude",
		MaxTokens: 256,
		System:    []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello there #sim:cache=3"))},
	}
	whole, err := c.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	checkAnswer(t, textOfMessage(whole), 12)
	// "Be brief." + the user text = 34 bytes = 9 tokens, 3 of them read from cache.
	if u := whole.Usage; u.InputTokens != 6 || u.CacheReadInputTokens != 3 || u.CacheCreationInputTokens != 0 || u.OutputTokens != 12 {
		t.Errorf("usage %+v", u)
	}
	if whole.StopReason != anthropic.StopReasonEndTurn || whole.Model != "sim-claude" {
		t.Errorf("stop %q model %q", whole.StopReason, whole.Model)
	}

	s := c.Messages.NewStreaming(context.Background(), params)
	var acc anthropic.Message
	for s.Next() {
		if err := acc.Accumulate(s.Current()); err != nil {
			t.Fatalf("accumulate: %v", err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if textOfMessage(&acc) != textOfMessage(whole) || acc.StopReason != anthropic.StopReasonEndTurn {
		t.Errorf("streamed %q (%s), non-streamed %q", textOfMessage(&acc), acc.StopReason, textOfMessage(whole))
	}
	if u := acc.Usage; u.InputTokens != 6 || u.CacheReadInputTokens != 3 || u.OutputTokens != 12 {
		t.Errorf("streamed usage %+v", u)
	}
}

func TestAnthropicToolUse(t *testing.T) {
	t.Parallel()
	_, c := anthropicClient(t, Options{})
	params := anthropic.MessageNewParams{
		Model: "sim-claude", MaxTokens: 256, Tools: []anthropic.ToolUnionParam{weatherTool},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("weather in Oslo?"))},
	}
	s := c.Messages.NewStreaming(context.Background(), params)
	var acc anthropic.Message
	fragments := 0
	for s.Next() {
		ev := s.Current()
		if ev.Type == "content_block_delta" && ev.Delta.Type == "input_json_delta" {
			fragments++
		}
		if err := acc.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.StopReason != anthropic.StopReasonToolUse || len(acc.Content) != 1 || fragments < 2 {
		t.Fatalf("stop %q, %d blocks, %d fragments", acc.StopReason, len(acc.Content), fragments)
	}
	tu := acc.Content[0].AsToolUse()
	var input map[string]any
	if err := json.Unmarshal(tu.Input, &input); err != nil || input["city"] != "sim" || input["days"] != 1.0 || tu.Name != "get_weather" {
		t.Fatalf("tool use %+v (%v)", tu, err)
	}

	params.Messages = append(params.Messages, acc.ToParam(),
		anthropic.NewUserMessage(anthropic.NewToolResultBlock(tu.ID, "cloudy, 3C", false)))
	res, err := c.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(textOfMessage(res), `"cloudy, 3C"`) || res.StopReason != anthropic.StopReasonEndTurn {
		t.Errorf("answer after the tool result %q (%s)", textOfMessage(res), res.StopReason)
	}
}

func TestAnthropicThinking(t *testing.T) {
	t.Parallel()
	_, c := anthropicClient(t, Options{})
	s := c.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
		Model: "sim-claude", MaxTokens: 256,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("ponder #sim:think"))},
	})
	var acc anthropic.Message
	for s.Next() {
		if err := acc.Accumulate(s.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Content) != 2 || acc.Content[0].Type != "thinking" || acc.Content[1].Type != "text" {
		t.Fatalf("blocks %+v", acc.Content)
	}
	th := acc.Content[0].AsThinking()
	if th.Thinking == "" || th.Signature == "" {
		t.Errorf("thinking block %+v", th)
	}
	// Output counts the thinking words too.
	if acc.Usage.OutputTokens <= 12 {
		t.Errorf("output tokens %d", acc.Usage.OutputTokens)
	}
}

func TestAnthropicMaxTokens(t *testing.T) {
	t.Parallel()
	_, c := anthropicClient(t, Options{})
	res, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "m", MaxTokens: 5, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != anthropic.StopReasonMaxTokens || len(strings.Fields(textOfMessage(res))) != 5 || res.Usage.OutputTokens != 5 {
		t.Errorf("limited %q (%s) %+v", textOfMessage(res), res.StopReason, res.Usage)
	}
}

func TestAnthropicCountTokens(t *testing.T) {
	t.Parallel()
	_, c := anthropicClient(t, Options{})
	res, err := c.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
		Model:    "sim-claude",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("twelve bytes"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.InputTokens != 3 {
		t.Errorf("input tokens %d, want 3", res.InputTokens)
	}
}

func TestAnthropicErrors(t *testing.T) {
	t.Parallel()
	_, c := anthropicClient(t, Options{})
	_, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "m", MaxTokens: 5, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("#sim:fail=529"))},
	})
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || !strings.Contains(apiErr.RawJSON(), `"overloaded_error"`) {
		t.Fatalf("error %v", err)
	}

	s := c.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
		Model: "m", MaxTokens: 50, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("#sim:error-mid"))},
	})
	for s.Next() {
	}
	if s.Err() == nil || !strings.Contains(s.Err().Error(), "overloaded_error") {
		t.Fatalf("mid-stream error %v", s.Err())
	}
}
