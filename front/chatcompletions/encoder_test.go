package chatcompletions

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	corev1 "modelgateway/gen/gateway/core/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func start(id string) *corev1.GenerateEvent {
	return startEv(&corev1.Start{Id: id, Model: "team/gpt", Created: 1730000000})
}

func usageEvent(in, cached, write, out, reasoning int64) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Usage{Usage: &corev1.Usage{InputTokens: in, CachedInputTokens: cached,
		CacheWriteTokens: write, OutputTokens: out, ReasoningTokens: reasoning, Reliable: true}}}
}

var passStart = startEv(&corev1.Start{Model: "team/gpt", Created: 1730000000, Passthrough: true, Status: 200, ContentType: "text/event-stream"})

// sdkView is what the openai-go SDK makes of the answer.
type sdkView struct {
	Content, Finish            string
	Tools                      []string // id name arguments
	Prompt, Completion, Cached int64
	Reasoning                  int64
	Err                        string // the stream error
}

type encCase struct {
	name   string // golden file name in testdata/
	stream bool
	events []*corev1.GenerateEvent
	fail   *corev1.StreamError // Fail instead of Finish
	sdk    sdkView
}

var encCases = []encCase{
	{name: "stream_text", stream: true, events: []*corev1.GenerateEvent{
		start("msg_01"), textEv("Hel"), textEv("lo <b>&</b>"), textEv(""),
		finishEv(corev1.FinishReason_FINISH_REASON_STOP_SEQUENCE), usageEvent(10, 20, 5, 7, 0),
	}, sdk: sdkView{Content: "Hello <b>&</b>", Finish: "stop", Prompt: 35, Completion: 7, Cached: 20}},
	{name: "stream_tools", stream: true, events: []*corev1.GenerateEvent{
		start("chatcmpl-7"), textEv("Checking."),
		toolCallEv(0, "toolu_1", "get_weather"), toolArgsEv(0, `{"city":`),
		toolCallEv(1, "", "get_time"), toolArgsEv(1, `{}`),
		toolArgsEv(0, `"Oslo"}`), toolArgsEv(0, ""),
		finishEv(corev1.FinishReason_FINISH_REASON_TOOL_CALLS), usageEvent(3, 0, 0, 9, 0),
	}, sdk: sdkView{Content: "Checking.", Finish: "tool_calls", Tools: []string{`toolu_1 get_weather {"city":"Oslo"}`, `call_* get_time {}`}, Prompt: 3, Completion: 9}},
	{name: "stream_reasoning_length", stream: true, events: []*corev1.GenerateEvent{
		start(""), reasoningEv("Think", ""), reasoningEv("", "sig=="), textEv("A"),
		finishEv(corev1.FinishReason_FINISH_REASON_LENGTH), usageEvent(4, 0, 0, 30, 25),
	}, sdk: sdkView{Content: "A", Finish: "length", Prompt: 4, Completion: 30, Reasoning: 25}},
	{name: "stream_content_filter_without_usage", stream: true, events: []*corev1.GenerateEvent{
		start("chatcmpl-8"), finishEv(corev1.FinishReason_FINISH_REASON_CONTENT_FILTER),
	}, sdk: sdkView{Finish: "content_filter"}},
	{name: "stream_without_finish", stream: true, events: []*corev1.GenerateEvent{
		start("chatcmpl-9"), textEv("x"),
	}, sdk: sdkView{Content: "x", Finish: "stop"}},
	{name: "stream_fail", stream: true, events: []*corev1.GenerateEvent{
		start("chatcmpl-10"), textEv("Par"),
	}, fail: &corev1.StreamError{Code: "upstream_error", Message: "the upstream failed mid-stream"},
		sdk: sdkView{Content: "Par", Err: `received error while streaming: {"message":"the upstream failed mid-stream","type":"service_error","code":"upstream_error","request_id":"req-42"}`}},
	{name: "stream_passthrough", stream: true, events: []*corev1.GenerateEvent{
		passStart,
		nativeEv(`{"id":"chatcmpl-P","object":"chat.completion.chunk","created":1,"model":"team/gpt","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null,"obfuscation":"abc"}`),
		textEv("ignored: canonical events of a passthrough are for core"),
		nativeEv(`{"id":"chatcmpl-P","object":"chat.completion.chunk","created":1,"model":"team/gpt","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}],"usage":null}`),
		nativeEv(`{"id":"chatcmpl-P","object":"chat.completion.chunk","created":1,"model":"team/gpt","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`),
		usageEvent(5, 0, 0, 1, 0),
	}, sdk: sdkView{Content: "Hi", Finish: "stop", Prompt: 5, Completion: 1}},
	{name: "stream_passthrough_fail", stream: true, events: []*corev1.GenerateEvent{
		passStart,
		nativeEv(`{"id":"chatcmpl-P","object":"chat.completion.chunk","created":1,"model":"team/gpt","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}],"usage":null}`),
	}, fail: &corev1.StreamError{Code: "upstream_timeout", Message: "the upstream stream stalled"},
		sdk: sdkView{Content: "Hi", Err: `received error while streaming: {"message":"the upstream stream stalled","type":"service_error","code":"upstream_timeout","request_id":"req-42"}`}},
	{name: "answer_text", events: []*corev1.GenerateEvent{
		start("msg_02"), reasoningEv("hmm", ""), textEv("Hello"), textEv(" there"),
		finishEv(corev1.FinishReason_FINISH_REASON_STOP), usageEvent(10, 2, 0, 5, 3),
	}, sdk: sdkView{Content: "Hello there", Finish: "stop", Prompt: 12, Completion: 5, Cached: 2, Reasoning: 3}},
	{name: "answer_tools", events: []*corev1.GenerateEvent{
		start("chatcmpl-11"),
		toolCallEv(0, "call_1", "get_weather"), toolArgsEv(0, `{"city":"Oslo"}`),
		toolCallEv(1, "call_2", "ping"),
		finishEv(corev1.FinishReason_FINISH_REASON_TOOL_CALLS), usageEvent(1, 0, 0, 2, 0),
	}, sdk: sdkView{Finish: "tool_calls", Tools: []string{`call_1 get_weather {"city":"Oslo"}`, `call_2 ping {}`}, Prompt: 1, Completion: 2}},
	{name: "answer_empty", events: []*corev1.GenerateEvent{
		start("chatcmpl-12"), finishEv(corev1.FinishReason_FINISH_REASON_OTHER),
	}, sdk: sdkView{Finish: "stop"}},
	{name: "answer_passthrough", events: []*corev1.GenerateEvent{
		startEv(&corev1.Start{Model: "team/gpt", Passthrough: true, Status: 200, ContentType: "application/json"}),
		nativeEv(`{"id":"chatcmpl-N","object":"chat.completion","created":1,"model":"team/gpt","choices":[{"index":0,"message":{"role":"assistant","content":"Hi","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6},"service_tier":"default"}`),
		usageEvent(5, 0, 0, 1, 0),
	}, sdk: sdkView{Content: "Hi", Finish: "stop", Prompt: 5, Completion: 1}},
}

// run drives an encoder the way the relay does and returns the recorded response.
func run(t *testing.T, tc encCase) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	r.Header.Set("X-Request-Id", "req-42")
	enc := Protocol{}.Encoder(rec, r, &corev1.GenerateRequest{Stream: tc.stream})
	if err := enc.Start(tc.events[0].GetStart()); err != nil {
		t.Fatal(err)
	}
	for _, ev := range tc.events[1:] {
		if err := enc.Event(ev); err != nil {
			t.Fatal(err)
		}
	}
	if tc.fail != nil {
		enc.Fail(tc.fail)
	} else if err := enc.Finish(); err != nil {
		t.Fatal(err)
	}
	return rec
}

// transcript is the golden form of a response: status, content type, body.
func transcript(rec *httptest.ResponseRecorder) string {
	return fmt.Sprintf("status: %d\ncontent-type: %s\n\n%s", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

// Names with generated ids are golden only after the random part is masked.
func mask(s string) string {
	for _, prefix := range []string{"chatcmpl-", "call_"} {
		var b strings.Builder
		for {
			i := strings.Index(s, `"`+prefix)
			if i < 0 {
				break
			}
			j := i + 1 + len(prefix)
			k := strings.IndexByte(s[j:], '"')
			b.WriteString(s[:j])
			if id := s[j : j+k]; len(id) == 26 && strings.ToUpper(id) == id { // crypto/rand.Text
				b.WriteString("<random>")
			} else {
				b.WriteString(id)
			}
			s = s[j+k:]
		}
		b.WriteString(s)
		s = b.String()
	}
	return s
}

func TestEncoderTranscripts(t *testing.T) {
	t.Parallel()
	for _, tc := range encCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			golden(t, tc.name+".golden", mask(transcript(run(t, tc))))
		})
	}
}

// TestOpenAISDKReadsTheAnswers parses every transcript with openai-go: the stream through its
// ssestream decoder (whole and one byte at a time) into ChatCompletionChunks accumulated by
// its ChatCompletionAccumulator, which also checks that every chunk repeats the same id.
func TestOpenAISDKReadsTheAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range encCases {
		for _, oneByte := range []bool{false, true} {
			if oneByte && !tc.stream {
				continue
			}
			t.Run(fmt.Sprintf("%s/one_byte=%v", tc.name, oneByte), func(t *testing.T) {
				t.Parallel()
				rec := run(t, tc)
				var got sdkView
				if tc.stream {
					got = readStream(t, rec, oneByte)
				} else {
					var c openai.ChatCompletion
					if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil {
						t.Fatal(err)
					}
					got = view(c)
				}
				if diff := cmp.Diff(tc.sdk, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			})
		}
	}
}

func readStream(t *testing.T, rec *httptest.ResponseRecorder, oneByte bool) sdkView {
	t.Helper()
	var body io.Reader = bytes.NewReader(rec.Body.Bytes())
	if oneByte {
		body = iotest.OneByteReader(body)
	}
	resp := &http.Response{StatusCode: rec.Code, Header: rec.Header(), Body: io.NopCloser(body)}
	stream := ssestream.NewStream[openai.ChatCompletionChunk](ssestream.NewDecoder(resp), nil)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("the accumulator refused chunk %s", stream.Current().RawJSON())
		}
	}
	v := view(acc.ChatCompletion)
	if err := stream.Err(); err != nil {
		v.Err = err.Error()
	}
	return v
}

func view(c openai.ChatCompletion) sdkView {
	var v sdkView
	if len(c.Choices) > 0 {
		m := c.Choices[0].Message
		v.Content, v.Finish = m.Content, c.Choices[0].FinishReason
		for _, tc := range m.ToolCalls {
			id := tc.ID
			if strings.HasPrefix(id, "call_") && len(id) == 31 {
				id = "call_*"
			}
			v.Tools = append(v.Tools, id+" "+tc.Function.Name+" "+tc.Function.Arguments)
		}
	}
	v.Prompt, v.Completion = c.Usage.PromptTokens, c.Usage.CompletionTokens
	v.Cached, v.Reasoning = c.Usage.PromptTokensDetails.CachedTokens, c.Usage.CompletionTokensDetails.ReasoningTokens
	return v
}

// Event constructors; front packages do not import core (design.md import rules), so the
// tests build events themselves.
func startEv(s *corev1.Start) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Start{Start: s}}
}

func nativeEv(data string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Native{Native: &corev1.Native{Data: []byte(data)}}}
}

func textEv(s string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Text{Text: &corev1.TextDelta{Text: s}}}
}

func reasoningEv(text, signature string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Reasoning{Reasoning: &corev1.ReasoningDelta{Text: text, Signature: signature}}}
}

func toolCallEv(index int32, id, name string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_ToolCall{ToolCall: &corev1.ToolCallStart{Index: index, Id: id, Name: name}}}
}

func toolArgsEv(index int32, fragment string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_ToolArguments{ToolArguments: &corev1.ToolCallDelta{Index: index, Arguments: fragment}}}
}

func finishEv(r corev1.FinishReason) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Finish{Finish: &corev1.Finish{Reason: r}}}
}

// discardWriter is a ResponseWriter that keeps nothing: the encoder's own cost.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Flush()                      {}

// The bench's translated stream: a start, 20 words, finish and usage.
func BenchmarkStreamEncoder(b *testing.B) {
	events := []*corev1.GenerateEvent{start("msg_01")}
	for i := range 20 {
		events = append(events, textEv(fmt.Sprintf(" word%d", i)))
	}
	events = append(events, finishEv(corev1.FinishReason_FINISH_REASON_STOP), usageEvent(12, 0, 0, 20, 0))
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	req := &corev1.GenerateRequest{Stream: true}
	b.ReportAllocs()
	for b.Loop() {
		enc := Protocol{}.Encoder(&discardWriter{h: http.Header{}}, r, req)
		for _, ev := range events {
			if ev.GetStart() != nil {
				if err := enc.Start(ev.GetStart()); err != nil {
					b.Fatal(err)
				}
				continue
			}
			if err := enc.Event(ev); err != nil {
				b.Fatal(err)
			}
		}
		if err := enc.Finish(); err != nil {
			b.Fatal(err)
		}
	}
}

// A passthrough stream as an include_usage upstream sends it: 20 content chunks with
// "usage":null, the usage chunk, then core's usage event with the cost spliced into it.
func BenchmarkPassthroughStreamWithCost(b *testing.B) {
	var events []*corev1.GenerateEvent
	for i := range 20 {
		events = append(events, &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Native{Native: &corev1.Native{Data: []byte(
			fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" word%d"},"finish_reason":null}],"usage":null}`, i))}}})
	}
	events = append(events,
		&corev1.GenerateEvent{Event: &corev1.GenerateEvent_Native{Native: &corev1.Native{Data: []byte(
			`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":20,"total_tokens":32}}`)}}},
		&corev1.GenerateEvent{Event: &corev1.GenerateEvent_Usage{Usage: &corev1.Usage{InputTokens: 12, OutputTokens: 20, Reliable: true, Cost: "0.000052", Currency: "RUB"}}})
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	req := &corev1.GenerateRequest{Stream: true}
	b.ReportAllocs()
	for b.Loop() {
		enc := Protocol{}.Encoder(&discardWriter{h: http.Header{}}, r, req)
		if err := enc.Start(passStart.GetStart()); err != nil {
			b.Fatal(err)
		}
		for _, ev := range events {
			if err := enc.Event(ev); err != nil {
				b.Fatal(err)
			}
		}
		if err := enc.Finish(); err != nil {
			b.Fatal(err)
		}
	}
}

// flushWriter records what was written and, at each flush, how much of it.
type flushWriter struct {
	discardWriter
	body    bytes.Buffer
	flushed []int
}

func (w *flushWriter) Write(b []byte) (int, error) { return w.body.Write(b) }
func (w *flushWriter) Flush()                      { w.flushed = append(w.flushed, w.body.Len()) }

// A passthrough's usage chunk (held for its cost) is written when core's usage event comes,
// and flushed with [DONE], which Finish writes at once after it: one flush for the two, as a
// translated stream's finish and usage chunks share [DONE]'s. Each content chunk is still
// flushed as it comes (the client must see it now).
func TestPassthroughUsageChunkIsFlushedWithDone(t *testing.T) {
	w := &flushWriter{discardWriter: discardWriter{h: http.Header{}}}
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	enc := Protocol{}.Encoder(w, r, &corev1.GenerateRequest{Stream: true})
	if err := enc.Start(passStart.GetStart()); err != nil {
		t.Fatal(err)
	}
	events := []*corev1.GenerateEvent{
		nativeEv(`{"id":"c","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}],"usage":null}`),
		nativeEv(`{"id":"c","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`),
		{Event: &corev1.GenerateEvent_Usage{Usage: &corev1.Usage{InputTokens: 5, OutputTokens: 1, Reliable: true, Cost: "0.000007", Currency: "RUB"}}},
	}
	for _, ev := range events {
		if err := enc.Event(ev); err != nil {
			t.Fatal(err)
		}
	}
	content := len("data: ") + len(events[0].GetNative().GetData()) + 2
	if len(w.flushed) != 1 || w.flushed[0] != content {
		t.Fatalf("flushes at %v before Finish, want one at %d (the content chunk)", w.flushed, content)
	}
	if err := enc.Finish(); err != nil {
		t.Fatal(err)
	}
	body := w.body.String()
	if len(w.flushed) != 2 || w.flushed[1] != len(body) || !strings.HasSuffix(body, "data: [DONE]\n\n") || !strings.Contains(body, `"cost":0.000007`) {
		t.Fatalf("flushes at %v of %d bytes, want the second at the end:\n%s", w.flushed, len(body), body)
	}
}
