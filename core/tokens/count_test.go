package tokens

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tiktoken-go/tokenizer/codec"

	corev1 "modelgateway/gen/gateway/core/v1"
)

func text(s string) *corev1.Part { return &corev1.Part{Kind: &corev1.Part_Text{Text: s}} }

func user(parts ...*corev1.Part) *corev1.Message {
	return &corev1.Message{Role: corev1.Role_ROLE_USER, Parts: parts}
}

func assistant(parts ...*corev1.Part) *corev1.Message {
	return &corev1.Message{Role: corev1.Role_ROLE_ASSISTANT, Parts: parts}
}

func TestCountExactFraming(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		req  *corev1.GenerateRequest
		want int64
	}{
		{"nil request is zero", nil, 0},
		{"empty request is the reply priming", &corev1.GenerateRequest{}, 3},
		{"one user message", &corev1.GenerateRequest{Messages: []*corev1.Message{user(text("hello world"))}}, 3 + 3 + 2},
		{"system prompt counts as a message", &corev1.GenerateRequest{
			System:   "hello world",
			Messages: []*corev1.Message{user(text("hello world"))},
		}, 3 + (3 + 2) + (3 + 2)},
		{"parts of one message share its framing", &corev1.GenerateRequest{
			Messages: []*corev1.Message{user(text("hello world"), text("hello world"))},
		}, 3 + 3 + 2 + 2},
		{"an image is a fixed estimate whatever its data", &corev1.GenerateRequest{
			Messages: []*corev1.Message{user(&corev1.Part{Kind: &corev1.Part_Image{Image: &corev1.Image{
				MimeType: "image/png", DataBase64: strings.Repeat("iVBORw0KGgo", 1000),
			}}})},
		}, 3 + 3 + PerImage},
		{"sampling parameters and model are not input", &corev1.GenerateRequest{
			Model: "some-model-name", User: "someone", Stop: []string{"hello world"},
			Messages: []*corev1.Message{user(text("hello world"))},
		}, 3 + 3 + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Count(tc.req); got != tc.want {
				t.Errorf("Count = %d, want %d", got, tc.want)
			}
		})
	}
}

// Each piece of model input adds exactly its own tokens to the count: none is dropped and
// none counted twice.
func TestCountAddsEachInput(t *testing.T) {
	t.Parallel()
	const (
		name   = "get_weather"
		desc   = "Get the current weather for a city."
		params = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`
		args   = `{"city":"Paris"}`
		result = `{"temperature":21,"unit":"celsius","sky":"clear"}`
		think  = "The user wants the weather, so I should call the tool."
	)
	base := func() *corev1.GenerateRequest {
		return &corev1.GenerateRequest{Messages: []*corev1.Message{user(text("What is the weather in Paris?"))}}
	}
	for _, tc := range []struct {
		name string
		add  func(*corev1.GenerateRequest)
		want int
	}{
		{"system prompt", func(r *corev1.GenerateRequest) { r.System = desc }, PerMessage + CountText(desc)},
		{"tool declaration name, description and schema", func(r *corev1.GenerateRequest) {
			r.Tools = append(r.Tools, &corev1.Tool{Name: name, Description: desc, Parameters: params})
		}, CountText(name) + CountText(desc) + CountText(params)},
		{"tool call name and arguments, not id or signature", func(r *corev1.GenerateRequest) {
			r.Messages = append(r.Messages, assistant(&corev1.Part{Kind: &corev1.Part_ToolCall{ToolCall: &corev1.ToolCall{
				Id: "call_0123456789abcdef", Name: name, Arguments: args, Signature: "c2lnbmF0dXJl",
			}}}))
		}, PerMessage + CountText(name) + CountText(args)},
		{"tool result content", func(r *corev1.GenerateRequest) {
			r.Messages = append(r.Messages, user(&corev1.Part{Kind: &corev1.Part_ToolResult{ToolResult: &corev1.ToolResult{
				CallId: "call_0123456789abcdef", Name: name, Content: result,
			}}}))
		}, PerMessage + CountText(result)},
		{"thinking text, not its signature", func(r *corev1.GenerateRequest) {
			r.Messages = append(r.Messages, assistant(&corev1.Part{Kind: &corev1.Part_Thinking{Thinking: &corev1.Thinking{
				Text: think, Signature: "c2lnbmF0dXJl",
			}}}))
		}, PerMessage + CountText(think)},
		{"structured output schema", func(r *corev1.GenerateRequest) {
			r.ResponseFormat = &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_JSON_SCHEMA, Schema: params}
		}, CountText(params)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.want <= 0 {
				t.Fatalf("test input adds %d tokens; want a positive difference", tc.want)
			}
			without := Count(base())
			r := base()
			tc.add(r)
			if got := Count(r) - without; got != int64(tc.want) {
				t.Errorf("adding it changed the count by %d, want %d", got, tc.want)
			}
		})
	}
}

func TestCountWithSystemToolsAndResultsIsLarger(t *testing.T) {
	t.Parallel()
	plain := &corev1.GenerateRequest{Messages: []*corev1.Message{user(text("What is the weather in Paris?"))}}
	full := agentRequest(0)
	if p, f := Count(plain), Count(full); f <= p {
		t.Errorf("with system, tool and tool result = %d, plain = %d: want more", f, p)
	}
}

// agentRequest is a realistic tool-using conversation of about 1 KB; i varies its text.
func agentRequest(i int) *corev1.GenerateRequest {
	return &corev1.GenerateRequest{
		Model:  "gpt-4o",
		System: "You are a concise travel assistant. Answer in at most three sentences and use the tools when the user asks about live data such as weather or flights.",
		Tools: []*corev1.Tool{{
			Name:        "get_weather",
			Description: "Get the current weather for a city, in the unit the user prefers.",
			Parameters:  `{"type":"object","properties":{"city":{"type":"string","description":"City and country, e.g. Paris, France"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}`,
		}},
		Messages: []*corev1.Message{
			user(text(fmt.Sprintf("Trip %d: I am flying to Paris next Tuesday for a conference and will stay near the Latin Quarter. What is the weather like there right now, and should I pack an umbrella?", i))),
			assistant(
				&corev1.Part{Kind: &corev1.Part_Thinking{Thinking: &corev1.Thinking{Text: "The user wants live weather for Paris; call get_weather in celsius."}}},
				&corev1.Part{Kind: &corev1.Part_ToolCall{ToolCall: &corev1.ToolCall{Id: "call_1", Name: "get_weather", Arguments: `{"city":"Paris, France","unit":"celsius"}`}}},
			),
			user(&corev1.Part{Kind: &corev1.Part_ToolResult{ToolResult: &corev1.ToolResult{
				CallId: "call_1", Name: "get_weather",
				Content: `{"city":"Paris","temperature":14,"unit":"celsius","conditions":"light rain","precipitation_probability":0.7,"wind_kph":18}`,
			}}}),
		},
	}
}

// Not parallel, so that it runs before the parallel tests resume: it builds the codec afresh
// and hits it from many goroutines at once, first use included (run with -race). The
// vocabulary map itself is built once per process by the library, under its own sync.Once.
func TestCountConcurrentFirstUse(t *testing.T) {
	encoding = sync.OnceValue(codec.NewO200kBase)
	const workers = 32
	got := make([]int64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range 20 {
				got[w] = Count(agentRequest(w))
			}
		})
	}
	wg.Wait()
	for w := range workers {
		if want := Count(agentRequest(w)); got[w] != want {
			t.Errorf("worker %d counted %d concurrently, %d alone", w, got[w], want)
		}
	}
}

func TestAgentRequestIsAboutOneKilobyte(t *testing.T) {
	t.Parallel()
	r := agentRequest(0)
	n := len(r.System)
	for _, tool := range r.Tools {
		n += len(tool.Name) + len(tool.Description) + len(tool.Parameters)
	}
	for _, m := range r.Messages {
		for _, p := range m.Parts {
			n += len(p.GetText()) + len(p.GetThinking().GetText()) + len(p.GetToolCall().GetArguments()) + len(p.GetToolResult().GetContent())
		}
	}
	if n < 800 || n > 1300 {
		t.Errorf("benchmark request holds %d bytes of text, want about 1 KB", n)
	}
}

func BenchmarkCount(b *testing.B) {
	r := agentRequest(0)
	Count(r) // build the encoding outside the timing
	b.ReportAllocs()
	for b.Loop() {
		Count(r)
	}
}

func BenchmarkCountParallel(b *testing.B) {
	r := agentRequest(0)
	Count(r)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			Count(r)
		}
	})
}
