package simulator

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// The official openai-go SDK, pointed at the simulator, must read every answer.

func openaiClient(t *testing.T, o Options) (*Simulator, openai.Client) {
	t.Helper()
	sim, url := start(t, o)
	return sim, openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
}

var weatherParams = openai.FunctionParameters{
	"type":       "object",
	"properties": map[string]any{"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}, "metric": map[string]any{"type": "boolean"}},
	"required":   []string{"city", "days"},
}

const weatherArgs = `{"city":"sim","days":1}`

// checkAnswer asserts the shape of a plain simulated answer of n words.
func checkAnswer(t *testing.T, text string, n int) {
	t.Helper()
	if !strings.HasPrefix(text, "Simulated reply ") || !strings.HasSuffix(text, ".") || len(strings.Fields(text)) != n {
		t.Errorf("answer %q is not a %d-word simulated reply", text, n)
	}
}

func TestOpenAIChatNonStreaming(t *testing.T) {
	t.Parallel()
	_, c := openaiClient(t, Options{})
	res, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "sim-gpt",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("hello there")},
	})
	if err != nil {
		t.Fatal(err)
	}
	checkAnswer(t, res.Choices[0].Message.Content, 12)
	if res.Model != "sim-gpt" || res.Object != "chat.completion" || res.Choices[0].FinishReason != "stop" {
		t.Errorf("model %q object %q finish %q", res.Model, res.Object, res.Choices[0].FinishReason)
	}
	// "Be brief." + "hello there" = 20 bytes = 5 tokens.
	if u := res.Usage; u.PromptTokens != 5 || u.CompletionTokens != 12 || u.TotalTokens != 17 {
		t.Errorf("usage %+v", u)
	}
}

func TestOpenAIChatStreamingMatchesNonStreaming(t *testing.T) {
	t.Parallel()
	_, c := openaiClient(t, Options{})
	params := openai.ChatCompletionNewParams{
		Model:         "sim-gpt",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream me #sim:cache=2")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	whole, err := c.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for s.Next() {
		if !acc.AddChunk(s.Current()) {
			t.Fatalf("the accumulator rejected chunk %d: %s", chunks, s.Current().RawJSON())
		}
		chunks++
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if got, want := acc.Choices[0].Message.Content, whole.Choices[0].Message.Content; got != want {
		t.Errorf("streamed %q, non-streamed %q", got, want)
	}
	// role chunk + 12 words + finish chunk + usage chunk
	if chunks != 15 {
		t.Errorf("%d chunks, want 15", chunks)
	}
	if acc.Usage.CompletionTokens != 12 || acc.Usage.PromptTokens != 6 || acc.Usage.PromptTokensDetails.CachedTokens != 2 {
		t.Errorf("streamed usage %+v", acc.Usage)
	}
	if acc.Choices[0].FinishReason != "stop" {
		t.Errorf("finish %q", acc.Choices[0].FinishReason)
	}
}

func TestOpenAIChatToolCall(t *testing.T) {
	t.Parallel()
	_, c := openaiClient(t, Options{})
	params := openai.ChatCompletionNewParams{
		Model:    "sim-gpt",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather in Oslo?")},
		Tools: []openai.ChatCompletionToolUnionParam{
			openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather", Parameters: weatherParams}),
			openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "other"}),
		},
	}
	res, err := c.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	calls := res.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != weatherArgs || calls[0].ID == "" {
		t.Fatalf("tool calls %+v", calls)
	}
	if res.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("finish %q", res.Choices[0].FinishReason)
	}

	s := c.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	var finished []openai.FinishedChatCompletionToolCall
	argDeltas := 0
	for s.Next() {
		ch := s.Current()
		acc.AddChunk(ch)
		if tc, ok := acc.JustFinishedToolCall(); ok {
			finished = append(finished, tc)
		}
		if len(ch.Choices) > 0 && len(ch.Choices[0].Delta.ToolCalls) > 0 && ch.Choices[0].Delta.ToolCalls[0].Function.Arguments != "" {
			argDeltas++
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(finished) != 1 || finished[0].Name != "get_weather" || finished[0].Arguments != weatherArgs || finished[0].ID != calls[0].ID {
		t.Fatalf("streamed tool calls %+v", finished)
	}
	if argDeltas < 2 {
		t.Errorf("arguments arrived in %d fragments, want several", argDeltas)
	}

	// With the tool's result as the last message the answer is text that quotes it.
	params.Messages = append(params.Messages, res.Choices[0].Message.ToParam(), openai.ToolMessage("14C and sunny", calls[0].ID))
	res, err = c.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if m := res.Choices[0].Message; len(m.ToolCalls) != 0 || !strings.Contains(m.Content, `"14C and sunny"`) || res.Choices[0].FinishReason != "stop" {
		t.Errorf("answer after the tool result: %+v, finish %q", m, res.Choices[0].FinishReason)
	}
}

func TestOpenAIChatToolChoice(t *testing.T) {
	t.Parallel()
	_, c := openaiClient(t, Options{})
	tools := []openai.ChatCompletionToolUnionParam{
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "first"}),
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "second"}),
	}
	cases := []struct {
		name   string
		choice openai.ChatCompletionToolChoiceOptionUnionParam
		want   string // tool called, "" for text
	}{
		{"none answers with text", openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")}, ""},
		{"a named function is called", openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "second"}), "second"},
		{"required calls the first", openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}, "first"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, Tools: tools, ToolChoice: tc.choice,
			})
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if calls := res.Choices[0].Message.ToolCalls; len(calls) > 0 {
				got = calls[0].Function.Name
			}
			if got != tc.want {
				t.Errorf("called %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOpenAIChatOutputLimit(t *testing.T) {
	t.Parallel()
	_, c := openaiClient(t, Options{})
	for _, p := range []openai.ChatCompletionNewParams{
		{MaxCompletionTokens: openai.Int(4)},
		{MaxTokens: openai.Int(4)},
	} {
		p.Model = "m"
		p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage("limit")}
		res, err := c.Chat.Completions.New(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if res.Choices[0].FinishReason != "length" || len(strings.Fields(res.Choices[0].Message.Content)) != 4 || res.Usage.CompletionTokens != 4 {
			t.Errorf("limited answer %q finish %q usage %+v", res.Choices[0].Message.Content, res.Choices[0].FinishReason, res.Usage)
		}
	}
}

func TestOpenAIChatStreamWithoutUsageOption(t *testing.T) {
	t.Parallel()
	_, c := openaiClient(t, Options{})
	s := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	for s.Next() {
		if raw := s.Current().RawJSON(); strings.Contains(raw, `"usage"`) {
			t.Fatalf("usage sent without stream_options.include_usage: %s", raw)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenAICompletions(t *testing.T) {
	t.Parallel()
	_, c := openaiClient(t, Options{Words: 20})
	params := openai.CompletionNewParams{
		Model:         "sim-instruct",
		Prompt:        openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	res, err := c.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	// max_tokens defaults to 16 on this endpoint, so a 20-word answer stops at 16.
	if res.Object != "text_completion" || res.Choices[0].FinishReason != "length" || len(strings.Fields(res.Choices[0].Text)) != 16 {
		t.Errorf("completion %+v", res.Choices[0])
	}
	if res.Usage.PromptTokens != 4 || res.Usage.CompletionTokens != 16 {
		t.Errorf("usage %+v", res.Usage)
	}
	s := c.Completions.NewStreaming(context.Background(), params)
	var text strings.Builder
	var usage openai.CompletionUsage
	finish := ""
	for s.Next() {
		ch := s.Current()
		for _, ci := range ch.Choices {
			text.WriteString(ci.Text)
			if ci.FinishReason != "" {
				finish = string(ci.FinishReason)
			}
		}
		if ch.Usage.TotalTokens > 0 {
			usage = ch.Usage
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != res.Choices[0].Text || finish != "length" || usage.CompletionTokens != 16 {
		t.Errorf("streamed %q finish %q usage %+v", text.String(), finish, usage)
	}
}

func TestOpenAIResponsesStreaming(t *testing.T) {
	t.Parallel()
	_, c := openaiClient(t, Options{})
	params := responses.ResponseNewParams{
		Model:        "sim-gpt",
		Instructions: openai.String("Be brief."),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("think first #sim:think")},
	}
	whole, err := c.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	checkAnswer(t, whole.OutputText(), 12)
	if whole.Status != "completed" || len(whole.Output) != 2 || whole.Output[0].Type != "reasoning" {
		t.Fatalf("response %s", whole.RawJSON())
	}
	s := c.Responses.NewStreaming(context.Background(), params)
	var text strings.Builder
	var reasoning strings.Builder
	var final responses.Response
	var types []string
	for s.Next() {
		ev := s.Current()
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.reasoning_summary_text.delta":
			reasoning.WriteString(ev.Delta)
		case "response.completed":
			final = ev.AsResponseCompleted().Response
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if types[0] != "response.created" || types[1] != "response.in_progress" || types[len(types)-1] != "response.completed" {
		t.Errorf("event order %v", types)
	}
	if text.String() != whole.OutputText() || final.OutputText() != whole.OutputText() {
		t.Errorf("streamed %q, completed %q, non-streamed %q", text.String(), final.OutputText(), whole.OutputText())
	}
	if reasoning.Len() == 0 || final.Output[0].AsReasoning().Summary[0].Text != reasoning.String() {
		t.Errorf("reasoning %q vs %+v", reasoning.String(), final.Output[0])
	}
	u := final.Usage
	if u.OutputTokens != 12+u.OutputTokensDetails.ReasoningTokens || u.OutputTokensDetails.ReasoningTokens == 0 ||
		u.InputTokens != whole.Usage.InputTokens || u.TotalTokens != u.InputTokens+u.OutputTokens {
		t.Errorf("usage %+v", u)
	}
}

func TestOpenAIResponsesToolCall(t *testing.T) {
	t.Parallel()
	_, c := openaiClient(t, Options{})
	params := responses.ResponseNewParams{
		Model: "sim-gpt",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("weather?")},
		Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "get_weather", Parameters: weatherParams, Strict: openai.Bool(true)}}},
	}
	s := c.Responses.NewStreaming(context.Background(), params)
	var args strings.Builder
	var done responses.ResponseFunctionToolCall
	for s.Next() {
		ev := s.Current()
		switch ev.Type {
		case "response.function_call_arguments.delta":
			args.WriteString(ev.Delta)
		case "response.completed":
			done = ev.Response.Output[0].AsFunctionCall()
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if args.String() != weatherArgs || done.Arguments != weatherArgs || done.Name != "get_weather" || done.CallID == "" {
		t.Fatalf("streamed arguments %q, final call %+v", args.String(), done)
	}
	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("weather?", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfFunctionCall(done.Arguments, done.CallID, done.Name),
		{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{CallID: openai.String(done.CallID),
			Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String("rain")}}},
	}}
	res, err := c.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.OutputText(), `"rain"`) {
		t.Errorf("answer after the tool result %q", res.OutputText())
	}
}

func TestOpenAIResponsesOutputLimit(t *testing.T) {
	t.Parallel()
	_, c := openaiClient(t, Options{})
	res, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "m", MaxOutputTokens: openai.Int(3), Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "incomplete" || res.IncompleteDetails.Reason != "max_output_tokens" || res.Usage.OutputTokens != 3 {
		t.Errorf("limited response %s", res.RawJSON())
	}
}

func TestOpenAIResponsesCompact(t *testing.T) {
	t.Parallel()
	_, c := openaiClient(t, Options{})
	res, err := c.Responses.Compact(context.Background(), responses.ResponseCompactParams{
		Model: "sim-gpt",
		Input: responses.ResponseCompactParamsInputUnion{OfResponseInputItemArray: []responses.ResponseInputItemUnionParam{
			responses.ResponseInputItemParamOfMessage("first question", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfMessage("long answer", responses.EasyInputMessageRoleAssistant),
			responses.ResponseInputItemParamOfMessage("second question", responses.EasyInputMessageRoleUser),
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Object != "response.compaction" || len(res.Output) != 3 {
		t.Fatalf("compaction %s", res.RawJSON())
	}
	if last := res.Output[2]; last.Type != "compaction" || last.AsCompaction().EncryptedContent == "" {
		t.Errorf("last item %s", last.RawJSON())
	}
	if first := res.Output[0].AsMessage(); first.Role != "user" {
		t.Errorf("first item %s", res.Output[0].RawJSON())
	}
	if res.Usage.InputTokens == 0 {
		t.Errorf("usage %+v", res.Usage)
	}
}

func TestOpenAIEmbeddings(t *testing.T) {
	t.Parallel()
	_, c := openaiClient(t, Options{})
	res, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model: "sim-embedding",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a cat", "a dog", "a cat"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 3 || len(res.Data[0].Embedding) != defaultDims || res.Usage.PromptTokens != 6 {
		t.Fatalf("embeddings %s", res.RawJSON())
	}
	if res.Data[0].Embedding[0] != res.Data[2].Embedding[0] || res.Data[0].Embedding[0] == res.Data[1].Embedding[0] {
		t.Errorf("equal texts must embed equally and different ones differently: %v", res.Data)
	}
	b64, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model: "sim-embedding", EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64, Dimensions: openai.Int(4),
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("a cat")},
	})
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(b64.RawJSON()), &raw); err != nil || len(raw.Data) != 1 || len(raw.Data[0].Embedding) != 24 {
		t.Errorf("base64 embedding of 4 float32s: %s (%v)", b64.RawJSON(), err)
	}
}

func TestOpenAIFailDirective(t *testing.T) {
	t.Parallel()
	_, c := openaiClient(t, Options{})
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("please #sim:fail=429")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "rate_limit_exceeded" || !strings.Contains(apiErr.Message, "#sim:fail=429") {
		t.Fatalf("error %v", err)
	}
}

func TestOpenAIErrorMidStream(t *testing.T) {
	t.Parallel()
	_, c := openaiClient(t, Options{})
	s := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("go #sim:error-mid")},
	})
	n := 0
	for s.Next() {
		n++
	}
	if s.Err() == nil || !strings.Contains(s.Err().Error(), "mid-stream") {
		t.Fatalf("stream error %v after %d chunks", s.Err(), n)
	}
	if n != 2 { // the role chunk and the first word
		t.Errorf("%d chunks before the error, want 2", n)
	}

	// The responses API reports it as an event of its own (openai-go hands it over as one).
	for _, tc := range []struct{ directive, last string }{
		{"#sim:error-mid", "error"},
		{"#sim:error-mid=failed", "response.failed"},
	} {
		rs := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
			Model: "m", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("go " + tc.directive)},
		})
		var last responses.ResponseStreamEventUnion
		for rs.Next() {
			last = rs.Current()
		}
		if err := rs.Err(); err != nil {
			t.Fatal(err)
		}
		msg := last.Message
		if tc.last == "response.failed" {
			msg = last.Response.Error.Message
		}
		if last.Type != tc.last || !strings.Contains(msg, "mid-stream") {
			t.Errorf("%s: last event %s", tc.directive, last.RawJSON())
		}
	}
}
