package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	mw "modelgateway/core/wire/messageswire"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func part(p isPart) *corev1.Part { return p.part() }

type isPart interface{ part() *corev1.Part }

type (
	textP   string
	toolP   struct{ id, name, args string }
	resultP struct {
		id, content string
		isError     bool
	}
)

func (t textP) part() *corev1.Part { return &corev1.Part{Kind: &corev1.Part_Text{Text: string(t)}} }
func (t toolP) part() *corev1.Part {
	return &corev1.Part{Kind: &corev1.Part_ToolCall{ToolCall: &corev1.ToolCall{Id: t.id, Name: t.name, Arguments: t.args}}}
}
func (r resultP) part() *corev1.Part {
	return &corev1.Part{Kind: &corev1.Part_ToolResult{ToolResult: &corev1.ToolResult{CallId: r.id, Content: r.content, IsError: r.isError}}}
}

func msg(role corev1.Role, parts ...isPart) *corev1.Message {
	m := &corev1.Message{Role: role}
	for _, p := range parts {
		m.Parts = append(m.Parts, part(p))
	}
	return m
}

const (
	user      = corev1.Role_ROLE_USER
	assistant = corev1.Role_ROLE_ASSISTANT
)

// A chat-completions conversation as its decoder leaves it: tool results in separate user
// turns (one per tool message), a user text between them, unsigned reasoning, arguments that
// are empty or not JSON, OpenAI-range temperature, fields the protocol lacks.
func chatConversation() *corev1.GenerateRequest {
	img := &corev1.Part{Kind: &corev1.Part_Image{Image: &corev1.Image{Url: "data:image/png;base64,iVBORw0KGgo="}}}
	urlImg := &corev1.Part{Kind: &corev1.Part_Image{Image: &corev1.Image{Url: "https://example.com/cat.jpg"}}}
	unsigned := &corev1.Part{Kind: &corev1.Part_Thinking{Thinking: &corev1.Thinking{Text: "from another provider"}}}
	signed := &corev1.Part{Kind: &corev1.Part_Thinking{Thinking: &corev1.Thinking{Text: "mine", Signature: "sig"}}}
	first := msg(user, textP("Weather in Oslo, and the time?"))
	first.Parts = append(first.Parts, img, urlImg)
	turn := msg(assistant, textP("Checking."), toolP{"call_1", "get_weather", `{ "city": "Oslo" }`}, toolP{"call_2", "get_time", ""}, toolP{"call_3", "broken", "not json"})
	turn.Parts = append([]*corev1.Part{unsigned, signed}, turn.Parts...)
	return &corev1.GenerateRequest{
		Protocol: corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS, Model: publicModel, Stream: true,
		System: "Be brief.\n\nUse tools.",
		Messages: []*corev1.Message{
			first, turn,
			msg(user, resultP{"call_1", "sunny", false}),
			msg(user, textP("also:"), resultP{"call_2", "", true}),
			msg(user, resultP{"call_3", `{"ok":true}`, false}),
		},
		Tools: []*corev1.Tool{
			{Name: "get_weather", Description: "Current weather", Parameters: `{"type":"object","properties":{"city":{"type":"string"}}}`},
			{Name: "get_time"},
		},
		ToolChoice:        &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_AUTO},
		ParallelToolCalls: new(false),
		Temperature:       new(1.7), TopP: new(0.9),
		Stop: []string{"END", ""}, Seed: new(int64(5)), PresencePenalty: new(0.5), Logprobs: true,
		User:            "user-1",
		ResponseFormat:  &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_JSON_OBJECT},
		MaxOutputTokens: new(int64(1000)),
	}
}

func TestTranslatedRequestGolden(t *testing.T) {
	t.Parallel()
	up := &upstream{body: readFile(t, "stop_sequence.sse")}
	s, err := Adapter{}.Generate(context.Background(), newCall(serve(t, up), chatConversation()))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, up.last(t).Body, "", "  "); err != nil {
		t.Fatal(err)
	}
	got := append(pretty.Bytes(), '\n')
	path := filepath.Join("testdata", "request_translated.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("request body differs (-want +got)\n%s", diff)
	}

	// The rules the golden shows, checked so that an -update cannot silently break them.
	var sent mw.Request
	if err := json.Unmarshal(up.last(t).Body, &sent); err != nil {
		t.Fatal(err)
	}
	if len(sent.Messages) != 3 {
		t.Fatalf("want user, assistant, user; got %d turns", len(sent.Messages))
	}
	results := sent.Messages[2].Content
	for i, typ := range []string{"tool_result", "tool_result", "tool_result", "text"} {
		if results[i].Type != typ {
			t.Errorf("turn 3 block %d is %s, want %s: results come first, all in one turn", i, results[i].Type, typ)
		}
	}
	if *sent.Temperature != 1 {
		t.Errorf("temperature %v not clamped to 1", *sent.Temperature)
	}
	for _, b := range sent.Messages[1].Content {
		if b.Type == mw.BlockToolUse && (len(b.Input) == 0 || b.Input[0] != '{') {
			t.Errorf("tool_use input %s is not an object", b.Input)
		}
	}
}

func TestThinkingRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		reasoning  *corev1.Reasoning
		maxTokens  int64
		choice     *corev1.ToolChoice
		wantBudget int64 // 0: no thinking
	}{
		{"an explicit budget is kept", &corev1.Reasoning{BudgetTokens: 2000}, 8192, nil, 2000},
		{"a budget below the minimum is raised to 1024", &corev1.Reasoning{BudgetTokens: 100}, 8192, nil, 1024},
		{"the budget stays below max_tokens", &corev1.Reasoning{BudgetTokens: 50000}, 8192, nil, 8191},
		{"an effort names a budget", &corev1.Reasoning{Effort: "medium"}, 32000, nil, 8192},
		{"an unknown effort asks for nothing", &corev1.Reasoning{Effort: "none"}, 32000, nil, 0},
		{"no room for the minimum budget: no thinking", &corev1.Reasoning{BudgetTokens: 2000}, 1000, nil, 0},
		{"a forced tool excludes thinking", &corev1.Reasoning{BudgetTokens: 2000}, 8192, &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_REQUIRED}, 0},
		{"disabled is off", &corev1.Reasoning{BudgetTokens: 2000, Disabled: true}, 8192, nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			req := chatRequest(false)
			req.Reasoning, req.MaxOutputTokens, req.ToolChoice = c.reasoning, &c.maxTokens, c.choice
			req.Tools = []*corev1.Tool{{Name: "f"}}
			req.Temperature, req.TopK = new(0.2), new(int32(5))
			w, err := buildRequest(newCall("http://x", req))
			if err != nil {
				t.Fatal(err)
			}
			var got int64
			if w.Thinking != nil {
				got = w.Thinking.BudgetTokens
				if w.Temperature != nil || w.TopK != nil {
					t.Error("sampling changes are sent with thinking, which the API refuses")
				}
			}
			if got != c.wantBudget {
				t.Errorf("budget %d, want %d", got, c.wantBudget)
			}
		})
	}
}

func TestMaxTokensDefaultsToTheModelLimit(t *testing.T) {
	t.Parallel()
	w, err := buildRequest(newCall("http://x", chatRequest(false)))
	if err != nil {
		t.Fatal(err)
	}
	if *w.MaxTokens != 8192 {
		t.Errorf("max_tokens %d, want the call's default 8192", *w.MaxTokens)
	}
}

func TestSeveralCandidatesAreRefused(t *testing.T) {
	t.Parallel()
	req := chatRequest(false)
	req.N = new(int32(2))
	_, err := Adapter{}.Generate(context.Background(), newCall("http://127.0.0.1:1", req))
	var ae *apierror.Error
	if !errors.As(err, &ae) || ae.Code != apierror.InvalidRequest {
		t.Fatalf("err = %v, want invalid_request_error", err)
	}
}

// The translated request of a streamed chat turn: the messages request with its max_tokens
// and stream values in one allocation, its turns, its content blocks.
func TestBuildRequestAllocations(t *testing.T) {
	call := newCall("http://x", chatRequest(true))
	n := testing.AllocsPerRun(100, func() {
		if _, err := buildRequest(call); err != nil {
			t.Fatal(err)
		}
	})
	if n > 3 {
		t.Fatalf("%v allocations, want at most 3 (the request, the turns, the blocks)", n)
	}
}
