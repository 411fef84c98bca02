package front_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"

	"modelgateway/core/gatewaytest"
)

// A tool-call round trip crosses protocols: the client declares a tool in its protocol, the
// upstream of another kind calls it, the client answers with a tool result, and the upstream
// sees that result attached to its own call id (translation.md §1: ids, names, result shape).

const toolResult = "14C and sunny"

var weatherSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"city": map[string]any{"type": "string"}},
	"required":   []string{"city"},
}

// The SDKs on the gateway with the profile's key, without retries.
func openaiClient(g *gatewaytest.Gen, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(g.Base + "/v1/"), option.WithAPIKey(g.Key), option.WithMaxRetries(0)}, opts...)...)
}

func anthropicClient(g *gatewaytest.Gen, opts ...anthropicopt.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]anthropicopt.RequestOption{anthropicopt.WithBaseURL(g.Base + "/"), anthropicopt.WithAPIKey(g.Key), anthropicopt.WithMaxRetries(0)}, opts...)...)
}

func genaiClient(ctx context.Context, g *gatewaytest.Gen) (*genai.Client, error) {
	return genai.NewClient(ctx, &genai.ClientConfig{APIKey: g.Key, Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: g.Base + "/"}})
}

func TestToolRoundTripChatToAnthropic(t *testing.T) {
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	ctx := context.Background()
	c := openaiClient(g)
	params := openai.ChatCompletionNewParams{
		Model:    "m-anthropic",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Oslo?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: "get_weather", Description: openai.String("Current weather"), Parameters: weatherSchema})},
	}
	s := c.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	choice := acc.Choices[0]
	if choice.FinishReason != "tool_calls" || len(choice.Message.ToolCalls) != 1 {
		t.Fatalf("finish %q, tool calls %+v", choice.FinishReason, choice.Message.ToolCalls)
	}
	call := choice.Message.ToolCalls[0]
	if call.Function.Name != "get_weather" || !json.Valid([]byte(call.Function.Arguments)) || call.ID == "" {
		t.Fatalf("tool call %+v", call)
	}
	params.Messages = append(params.Messages, choice.Message.ToParam(), openai.ToolMessage(toolResult, call.ID))
	r, err := c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Choices[0].Message.Content, toolResult) {
		t.Fatalf("answer does not use the tool result: %q", r.Choices[0].Message.Content)
	}
	// The upstream got one user turn with the tool_result for the call id it issued.
	var up struct {
		Messages []struct {
			Role    string
			Content json.RawMessage
		}
	}
	if err := json.Unmarshal(g.Up.Last(t).Body, &up); err != nil {
		t.Fatal(err)
	}
	last := up.Messages[len(up.Messages)-1]
	if last.Role != "user" || !strings.Contains(string(last.Content), `"tool_use_id":"`+call.ID+`"`) {
		t.Fatalf("upstream messages: %s", g.Up.Last(t).Body)
	}
}

func TestToolRoundTripMessagesToGemini(t *testing.T) {
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	ctx := context.Background()
	c := anthropicClient(g)
	params := anthropic.MessageNewParams{Model: "m-gemini", MaxTokens: 256,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is the weather in Oslo?"))},
		Tools: []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
			Properties: weatherSchema["properties"], Required: []string{"city"}}, "get_weather")},
	}
	var msg anthropic.Message
	s := c.Messages.NewStreaming(ctx, params)
	for s.Next() {
		if err := msg.Accumulate(s.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	var use *anthropic.ContentBlockUnion
	for i := range msg.Content {
		if msg.Content[i].Type == "tool_use" {
			use = &msg.Content[i]
		}
	}
	if msg.StopReason != "tool_use" || use == nil || use.Name != "get_weather" || !strings.HasPrefix(use.ID, "toolu_") {
		t.Fatalf("stop %q, content %+v", msg.StopReason, msg.Content)
	}
	params.Messages = append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, toolResult, false)))
	r, err := c.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Content) == 0 || !strings.Contains(r.Content[0].Text, toolResult) {
		t.Fatalf("answer %+v", r.Content)
	}
	// Gemini needs the function name on the response part; the gateway looked it up.
	body := string(g.Up.Last(t).Body)
	if !strings.Contains(body, `"functionResponse"`) || !strings.Contains(body, `"name":"get_weather"`) {
		t.Fatalf("upstream body: %s", body)
	}
}

func TestToolRoundTripGeminiToOpenAI(t *testing.T) {
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	ctx := context.Background()
	c, err := genaiClient(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
		Name: "get_weather", Description: "Current weather", ParametersJsonSchema: weatherSchema}}}}}
	contents := genai.Text("What is the weather in Oslo?")
	var calls []*genai.FunctionCall
	var modelTurn *genai.Content
	for r, err := range c.Models.GenerateContentStream(ctx, "m-openai", contents, cfg) {
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, r.FunctionCalls()...)
		if len(r.FunctionCalls()) > 0 {
			modelTurn = r.Candidates[0].Content
		}
	}
	if len(calls) != 1 || calls[0].Name != "get_weather" || calls[0].Args["city"] == nil {
		t.Fatalf("function calls %+v", calls)
	}
	contents = append(contents, modelTurn, genai.NewContentFromFunctionResponse("get_weather", map[string]any{"result": toolResult}, genai.RoleUser))
	r, err := c.Models.GenerateContent(ctx, "m-openai", contents, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Text(), toolResult) {
		t.Fatalf("answer %q", r.Text())
	}
	// The chat upstream got an assistant tool call and a tool message with the same id.
	var up struct {
		Messages []struct {
			Role       string
			ToolCallID string                `json:"tool_call_id"`
			ToolCalls  []struct{ ID string } `json:"tool_calls"`
		}
	}
	if err := json.Unmarshal(g.Up.Last(t).Body, &up); err != nil {
		t.Fatal(err)
	}
	n := len(up.Messages)
	if n < 2 || up.Messages[n-1].Role != "tool" || len(up.Messages[n-2].ToolCalls) != 1 || up.Messages[n-2].ToolCalls[0].ID != up.Messages[n-1].ToolCallID {
		t.Fatalf("upstream messages: %s", g.Up.Last(t).Body)
	}
}

func TestToolRoundTripResponsesToAnthropic(t *testing.T) {
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	ctx := context.Background()
	c := openaiClient(g)
	params := responses.ResponseNewParams{Model: "m-anthropic",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("What is the weather in Oslo?", responses.EasyInputMessageRoleUser)}},
		Tools: []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather", weatherSchema, false)},
	}
	s := c.Responses.NewStreaming(ctx, params)
	var done *responses.Response
	for s.Next() {
		if ev := s.Current(); ev.Type == "response.completed" {
			r := ev.Response
			done = &r
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if done == nil {
		t.Fatal("no response.completed")
	}
	var call *responses.ResponseOutputItemUnion
	for i := range done.Output {
		if done.Output[i].Type == "function_call" {
			call = &done.Output[i]
		}
	}
	if call == nil || call.Name != "get_weather" || call.CallID == "" {
		t.Fatalf("output %+v", done.Output)
	}
	out := responses.ResponseInputItemParamOfFunctionCallOutput(toolResult)
	out.OfFunctionCallOutput.CallID = param.NewOpt(call.CallID)
	params.Input.OfInputItemList = append(params.Input.OfInputItemList,
		responses.ResponseInputItemParamOfFunctionCall(call.Arguments.OfString, call.CallID, call.Name), out)
	r, err := c.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.OutputText(), toolResult) {
		t.Fatalf("answer %q", r.OutputText())
	}
}
