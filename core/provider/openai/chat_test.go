package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
	"modelgateway/core/provider"
	"modelgateway/core/wire/sse"
)

var chatUpdate = flag.Bool("update", false, "rewrite the golden files in testdata/")

// chatUpstream is a fake OpenAI server: it records the request it got and replays a recorded
// answer, whole or one byte per write with a flush after each, so that every framing
// boundary falls inside a read.
type chatUpstream struct {
	t       *testing.T
	status  int
	body    []byte
	ctype   string
	oneByte bool

	mu     sync.Mutex
	header http.Header
	path   string
	got    []byte
}

func (u *chatUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.header, u.path, u.got = r.Header.Clone(), r.URL.Path, b
	u.mu.Unlock()
	w.Header().Set("Content-Type", u.ctype)
	w.WriteHeader(u.status)
	if !u.oneByte {
		_, _ = w.Write(u.body)
		return
	}
	f := w.(http.Flusher)
	for i := range u.body {
		if _, err := w.Write(u.body[i : i+1]); err != nil {
			return
		}
		f.Flush()
	}
}

func (u *chatUpstream) request() (http.Header, string, []byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.header, u.path, u.got
}

func chatServe(t *testing.T, u *chatUpstream) string {
	t.Helper()
	srv := httptest.NewServer(u)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1/"
}

func chatReplay(t *testing.T, file string, oneByte bool) *chatUpstream {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	ctype := "text/event-stream; charset=utf-8"
	if strings.HasSuffix(file, ".json") {
		ctype = "application/json"
	}
	return &chatUpstream{t: t, status: http.StatusOK, body: b, ctype: ctype, oneByte: oneByte}
}

func chatCall(base string, req *corev1.GenerateRequest) *provider.Call {
	return &provider.Call{Request: req, Upstream: provider.Upstream{PublicModel: "public-model", UpstreamModel: "gpt-4o-mini",
		BaseURL: base, APIKey: "sk-upstream", Timeouts: provider.Timeouts{FirstByte: 5 * time.Second, Idle: 5 * time.Second}}}
}

// chatTranslatedRequest is what a messages client decodes to: any protocol but the OpenAI ones
// takes the translated path.
func chatTranslatedRequest(stream bool) *corev1.GenerateRequest {
	max := int64(256)
	return &corev1.GenerateRequest{
		Protocol: corev1.Protocol_PROTOCOL_MESSAGES, EndpointFamily: "messages", Model: "public-model",
		Stream: stream, MaxOutputTokens: &max, System: "Be brief.",
		Messages:       []*corev1.Message{{Role: corev1.Role_ROLE_USER, Parts: []*corev1.Part{{Kind: &corev1.Part_Text{Text: "Hi"}}}}},
		ForwardHeaders: map[string]string{"Authorization": "Bearer client-key", "User-Agent": "client-sdk/9", "X-Api-Key": "client-key"},
	}
}

// chatFormat renders events one per line for the golden files; Start's created is the clock's
// and is left out.
func chatFormat(evs []*corev1.GenerateEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		switch x := ev.GetEvent().(type) {
		case *corev1.GenerateEvent_Start:
			s := x.Start
			fmt.Fprintf(&b, "start id=%q model=%q passthrough=%v status=%d content_type=%q\n", s.GetId(), s.GetModel(), s.GetPassthrough(), s.GetStatus(), s.GetContentType())
		case *corev1.GenerateEvent_Native:
			fmt.Fprintf(&b, "native event=%q data=%s\n", x.Native.GetEvent(), x.Native.GetData())
		case *corev1.GenerateEvent_Text:
			fmt.Fprintf(&b, "text %q\n", x.Text.GetText())
		case *corev1.GenerateEvent_Reasoning:
			fmt.Fprintf(&b, "reasoning %q signature=%q\n", x.Reasoning.GetText(), x.Reasoning.GetSignature())
		case *corev1.GenerateEvent_ToolCall:
			fmt.Fprintf(&b, "tool_call index=%d id=%q name=%q\n", x.ToolCall.GetIndex(), x.ToolCall.GetId(), x.ToolCall.GetName())
		case *corev1.GenerateEvent_ToolArguments:
			fmt.Fprintf(&b, "tool_arguments index=%d %q\n", x.ToolArguments.GetIndex(), x.ToolArguments.GetArguments())
		case *corev1.GenerateEvent_Finish:
			fmt.Fprintf(&b, "finish %s\n", x.Finish.GetReason())
		case *corev1.GenerateEvent_Usage:
			u := x.Usage
			fmt.Fprintf(&b, "usage input=%d cached=%d cache_write=%d output=%d reasoning=%d reliable=%v\n",
				u.GetInputTokens(), u.GetCachedInputTokens(), u.GetCacheWriteTokens(), u.GetOutputTokens(), u.GetReasoningTokens(), u.GetReliable())
		default:
			fmt.Fprintf(&b, "unexpected %T\n", x)
		}
	}
	return b.String()
}

func chatGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *chatUpdate {
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

func chatGenerate(t *testing.T, call *provider.Call) ([]*corev1.GenerateEvent, provider.Stream, error) {
	t.Helper()
	s, err := Adapter{}.Generate(context.Background(), call)
	if err != nil {
		return nil, nil, err
	}
	t.Cleanup(func() { s.Close() })
	evs, err := provider.Drain(s)
	return evs, s, err
}

var chatModes = []struct {
	name    string
	oneByte bool
}{{"whole", false}, {"one byte at a time", true}}

func TestTranslatedStreamDecodesRecordedUpstreams(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"chat_text.sse", "chat_tools.sse", "chat_reasoning.sse", "chat_forced_tool.sse"} {
		for _, m := range chatModes {
			t.Run(file+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				u := chatReplay(t, file, m.oneByte)
				evs, s, err := chatGenerate(t, chatCall(chatServe(t, u), chatTranslatedRequest(true)))
				if err != nil {
					t.Fatal(err)
				}
				chatGolden(t, strings.TrimSuffix(file, ".sse")+".translated.events", chatFormat(evs))
				if got, want := s.Usage().Reliable, true; got != want {
					t.Errorf("usage reliable = %v, want %v (%s)", got, want, s.Usage().Why)
				}
			})
		}
	}
}

func TestPassthroughStreamRelaysChunksVerbatim(t *testing.T) {
	t.Parallel()
	for _, m := range chatModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			u := chatReplay(t, "chat_text.sse", m.oneByte)
			req := &corev1.GenerateRequest{Protocol: corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS, Model: "public-model", Stream: true,
				RawBody: []byte(`{"model":"public-model","stream":true,"messages":[{"role":"user","content":"Hi"}],"x_unknown":{"kept":true}}`)}
			call := chatCall(chatServe(t, u), req)
			call.UpstreamModel = "gpt-4o-mini-2024-07-18"
			evs, s, err := chatGenerate(t, call)
			if err != nil {
				t.Fatal(err)
			}
			chatGolden(t, "chat_text.passthrough.events", chatFormat(evs))
			want := metering.Usage{Input: 11, CachedInput: 8, Output: 4, Reliable: true}
			if diff := cmp.Diff(want, s.Usage()); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
			_, path, body := u.request()
			if path != "/v1/chat/completions" {
				t.Errorf("path = %q", path)
			}
			wantBody := `{"model":"gpt-4o-mini-2024-07-18","stream":true,"messages":[{"role":"user","content":"Hi"}],"x_unknown":{"kept":true},"stream_options":{"include_usage":true}}`
			if string(body) != wantBody {
				t.Errorf("upstream body\n got %s\nwant %s", body, wantBody)
			}
		})
	}
}

func TestPassthroughKeepsTheClientsStreamOptions(t *testing.T) {
	t.Parallel()
	u := chatReplay(t, "chat_text.sse", false)
	req := &corev1.GenerateRequest{Protocol: corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS, Stream: true,
		RawBody: []byte(`{"model":"m","stream":true,"stream_options":{"include_usage":false,"include_obfuscation":false},"messages":[]}`)}
	if _, _, err := chatGenerate(t, chatCall(chatServe(t, u), req)); err != nil {
		t.Fatal(err)
	}
	_, _, body := u.request()
	if got := gjson.GetBytes(body, "stream_options").Raw; got != `{"include_usage":true,"include_obfuscation":false}` {
		t.Errorf("stream_options = %s", got)
	}
}

func TestUpstreamRequestCarriesOnlyTheGatewaysHeaders(t *testing.T) {
	t.Parallel()
	for _, proto := range []corev1.Protocol{corev1.Protocol_PROTOCOL_MESSAGES, corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS} {
		t.Run(proto.String(), func(t *testing.T) {
			t.Parallel()
			u := chatReplay(t, "chat_text.sse", false)
			req := chatTranslatedRequest(true)
			req.Protocol = proto
			req.RawBody = []byte(`{"model":"public-model","stream":true,"messages":[{"role":"user","content":"Hi"}]}`)
			if _, _, err := chatGenerate(t, chatCall(chatServe(t, u), req)); err != nil {
				t.Fatal(err)
			}
			h, _, body := u.request()
			if got := h.Get("Authorization"); got != "Bearer sk-upstream" {
				t.Errorf("Authorization = %q, want the provider key", got)
			}
			if got := h.Get("User-Agent"); got != provider.UserAgent {
				t.Errorf("User-Agent = %q, want %q", got, provider.UserAgent)
			}
			for _, name := range []string{"X-Api-Key", "Api-Key"} {
				if got := h.Get(name); got != "" {
					t.Errorf("%s = %q, want none", name, got)
				}
			}
			if bytes.Contains(body, []byte("client-key")) {
				t.Errorf("the client's key reached the upstream body: %s", body)
			}
			if !gjson.GetBytes(body, "stream_options.include_usage").Bool() {
				t.Errorf("stream_options.include_usage is not set: %s", body)
			}
		})
	}
}

func TestNoAuthorizationWithoutAProviderKey(t *testing.T) {
	t.Parallel()
	u := chatReplay(t, "chat_text.sse", false)
	call := chatCall(chatServe(t, u), chatTranslatedRequest(true))
	call.APIKey = ""
	if _, _, err := chatGenerate(t, call); err != nil {
		t.Fatal(err)
	}
	if h, _, _ := u.request(); h.Get("Authorization") != "" {
		t.Errorf("Authorization = %q, want none", h.Get("Authorization"))
	}
}

func TestTranslatedRequestBody(t *testing.T) {
	t.Parallel()
	max, temp, strict, parallel, n := int64(300), 0.2, true, false, int32(2)
	req := &corev1.GenerateRequest{
		Protocol: corev1.Protocol_PROTOCOL_MESSAGES, Model: "public-model", Stream: true,
		System: "Be brief.\n\nUse metric units.", MaxOutputTokens: &max, Temperature: &temp,
		Stop: []string{"END"}, User: "u-1", ParallelToolCalls: &parallel, N: &n,
		Messages: []*corev1.Message{
			{Role: corev1.Role_ROLE_USER, Parts: []*corev1.Part{
				{Kind: &corev1.Part_Text{Text: "Weather in Oslo and Rome?"}},
				{Kind: &corev1.Part_Image{Image: &corev1.Image{MimeType: "image/png", DataBase64: "iVBORw0KGgo="}}},
				{Kind: &corev1.Part_Image{Image: &corev1.Image{Url: "https://example.com/map.png"}}},
			}},
			{Role: corev1.Role_ROLE_ASSISTANT, Parts: []*corev1.Part{
				{Kind: &corev1.Part_Thinking{Thinking: &corev1.Thinking{Text: "two calls", Signature: "sig"}}},
				{Kind: &corev1.Part_ToolCall{ToolCall: &corev1.ToolCall{Id: "toolu_1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}},
				{Kind: &corev1.Part_ToolCall{ToolCall: &corev1.ToolCall{Id: "toolu_2", Name: "get_weather", Arguments: ""}}},
			}},
			{Role: corev1.Role_ROLE_USER, Parts: []*corev1.Part{
				{Kind: &corev1.Part_ToolResult{ToolResult: &corev1.ToolResult{CallId: "toolu_1", Name: "get_weather", Content: `{"c":3}`}}},
				{Kind: &corev1.Part_ToolResult{ToolResult: &corev1.ToolResult{CallId: "toolu_2", Name: "get_weather", Content: "sunny"}}},
				{Kind: &corev1.Part_Text{Text: "Thanks."}},
			}},
		},
		Tools: []*corev1.Tool{{Name: "get_weather", Description: "Weather by city",
			Parameters: `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`, Strict: &strict}},
		ToolChoice:     &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_NAMED, Name: "get_weather"},
		ResponseFormat: &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_JSON_SCHEMA, Schema: `{"type":"object"}`},
		Reasoning:      &corev1.Reasoning{BudgetTokens: 8000},
	}
	b, err := json.MarshalIndent(chatRequest(req, "gpt-4o"), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	chatGolden(t, "request_translated.json", string(b)+"\n")
}

func TestTranslatedRequestOmitsWhatTheClientDidNotSet(t *testing.T) {
	t.Parallel()
	parallel := true
	req := chatTranslatedRequest(false)
	req.MaxOutputTokens = nil
	req.ParallelToolCalls = &parallel // without tools OpenAI refuses it
	b, err := json.Marshal(chatRequest(req, "gpt-4o"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"gpt-4o","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}`
	if string(b) != want {
		t.Errorf("body\n got %s\nwant %s", b, want)
	}
}

func TestNonStreamingAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file, golden string
		proto              corev1.Protocol
		route              string
		raw                string
	}{
		{"translated chat completion", "chat_answer.json", "chat_answer.translated.events", corev1.Protocol_PROTOCOL_MESSAGES, "/v1/chat/completions", ""},
		{"passthrough chat completion", "chat_answer.json", "chat_answer.passthrough.events", corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS, "/v1/chat/completions", `{"model":"public-model","messages":[]}`},
		{"passthrough legacy completion", "completions_answer.json", "completions_answer.passthrough.events", corev1.Protocol_PROTOCOL_COMPLETIONS, "/v1/completions", `{"model":"public-model","prompt":"Say hello"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u := chatReplay(t, tc.file, false)
			req := chatTranslatedRequest(false)
			req.Protocol, req.RawBody = tc.proto, []byte(tc.raw)
			call := chatCall(chatServe(t, u), req)
			call.UpstreamModel = gjson.GetBytes(u.body, "model").String()
			evs, _, err := chatGenerate(t, call)
			if err != nil {
				t.Fatal(err)
			}
			chatGolden(t, tc.golden, chatFormat(evs))
			h, path, body := u.request()
			if path != tc.route {
				t.Errorf("path = %q, want %q", path, tc.route)
			}
			if h.Get("Accept") != "application/json" {
				t.Errorf("Accept = %q", h.Get("Accept"))
			}
			if gjson.GetBytes(body, "stream_options").Exists() {
				t.Errorf("a non-streaming request got stream_options: %s", body)
			}
		})
	}
}

func TestCompletionsPassthroughStream(t *testing.T) {
	t.Parallel()
	for _, m := range chatModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			u := chatReplay(t, "completions_text.sse", m.oneByte)
			req := &corev1.GenerateRequest{Protocol: corev1.Protocol_PROTOCOL_COMPLETIONS, Stream: true,
				RawBody: []byte(`{"model":"public-model","prompt":"Tell","stream":true}`)}
			call := chatCall(chatServe(t, u), req)
			call.UpstreamModel = "gpt-3.5-turbo-instruct"
			evs, _, err := chatGenerate(t, call)
			if err != nil {
				t.Fatal(err)
			}
			chatGolden(t, "completions_text.passthrough.events", chatFormat(evs))
			if _, path, body := u.request(); path != "/v1/completions" || !gjson.GetBytes(body, "stream_options.include_usage").Bool() {
				t.Errorf("path %q body %s", path, body)
			}
		})
	}
}

func TestBrokenStreamsFail(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file string
		proto      corev1.Protocol
		want       []string // events before the failure, by kind
		message    string
	}{
		{"translated stream cut before [DONE]", "chat_cut.sse", corev1.Protocol_PROTOCOL_MESSAGES, []string{"start", "text"}, "ended before data: [DONE]"},
		{"passthrough stream cut before [DONE]", "chat_cut.sse", corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS, []string{"start", "native", "native", "native"}, "ended before data: [DONE]"},
		{"translated stream with an error chunk", "chat_error.sse", corev1.Protocol_PROTOCOL_MESSAGES, []string{"start", "text"}, "The server had an error"},
		{"passthrough stream with an error chunk", "chat_error.sse", corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS, []string{"start", "native", "native"}, "The server had an error"},
	}
	for _, tc := range cases {
		for _, m := range chatModes {
			t.Run(tc.name+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				u := chatReplay(t, tc.file, m.oneByte)
				req := chatTranslatedRequest(true)
				req.Protocol, req.RawBody = tc.proto, []byte(`{"model":"public-model","stream":true,"messages":[]}`)
				evs, s, err := chatGenerate(t, chatCall(chatServe(t, u), req))
				var pe *provider.Error
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v (%T), want *provider.Error", err, err)
				}
				if !strings.Contains(pe.Message, tc.message) {
					t.Errorf("message = %q, want it to contain %q", pe.Message, tc.message)
				}
				var kinds []string
				for _, ev := range evs {
					kinds = append(kinds, chatKind(ev))
				}
				if diff := cmp.Diff(tc.want, kinds); diff != "" {
					t.Errorf("events before the failure (-want +got):\n%s", diff)
				}
				if s.Usage().Reliable {
					t.Errorf("a broken stream's usage is reliable")
				}
			})
		}
	}
}

func chatKind(ev *corev1.GenerateEvent) string {
	name := fmt.Sprintf("%T", ev.GetEvent())
	name = strings.TrimPrefix(name, "*corev1.GenerateEvent_")
	switch name {
	case "ToolCall":
		return "tool_call"
	case "ToolArguments":
		return "tool_arguments"
	}
	return strings.ToLower(name)
}

func TestUpstreamStatusErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		status    int
		body      string
		retryable bool
		message   string
	}{
		{"429 is retryable and keeps the upstream message", http.StatusTooManyRequests,
			`{"error":{"message":"Rate limit reached for gpt-4o-mini","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, true, "Rate limit reached"},
		{"500 is retryable", http.StatusInternalServerError,
			`{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`, true, "upstream status 500"},
		{"400 is final", http.StatusBadRequest,
			`{"error":{"message":"Unrecognized request argument supplied: foo","type":"invalid_request_error","param":null,"code":null}}`, false, "Unrecognized request argument"},
		{"401 hides the upstream message", http.StatusUnauthorized,
			`{"error":{"message":"Incorrect API key provided: sk-upst****","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, false, "refused the gateway's credentials"},
	}
	for _, tc := range cases {
		for _, proto := range []corev1.Protocol{corev1.Protocol_PROTOCOL_MESSAGES, corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS, corev1.Protocol_PROTOCOL_COMPLETIONS} {
			t.Run(tc.name+"/"+proto.String(), func(t *testing.T) {
				t.Parallel()
				u := &chatUpstream{t: t, status: tc.status, body: []byte(tc.body), ctype: "application/json"}
				req := chatTranslatedRequest(true)
				req.Protocol, req.RawBody = proto, []byte(`{"model":"public-model","stream":true}`)
				_, err := Adapter{}.Generate(context.Background(), chatCall(chatServe(t, u), req))
				var pe *provider.Error
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v (%T), want *provider.Error", err, err)
				}
				if pe.Status != tc.status || pe.Retryable != tc.retryable {
					t.Errorf("status %d retryable %v, want %d %v", pe.Status, pe.Retryable, tc.status, tc.retryable)
				}
				if !strings.Contains(pe.Message, tc.message) {
					t.Errorf("message = %q, want it to contain %q", pe.Message, tc.message)
				}
				if strings.Contains(pe.Message, "sk-upst") {
					t.Errorf("message leaks the key: %q", pe.Message)
				}
			})
		}
	}
}

func TestUnreachableUpstreamIsRetryable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL + "/v1"
	srv.Close()
	_, err := Adapter{}.Generate(context.Background(), chatCall(base, chatTranslatedRequest(true)))
	var pe *provider.Error
	if !errors.As(err, &pe) || !pe.Retryable || pe.Status != 0 {
		t.Fatalf("err = %#v, want a retryable transport *provider.Error", err)
	}
}

func TestChatDecoderEdgeCases(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		chunks []string
		want   string
	}{
		{"a call without a finish reason still finishes as a tool call",
			[]string{`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":""}}]}}]}`},
			"tool_call index=0 id=\"c\" name=\"f\"\nfinish FINISH_REASON_TOOL_CALLS\n"},
		{"refusals read as text and content_filter maps",
			[]string{`{"choices":[{"index":0,"delta":{"refusal":"I can't help with that."},"finish_reason":"content_filter"}]}`},
			"text \"I can't help with that.\"\nfinish FINISH_REASON_CONTENT_FILTER\n"},
		{"other choices of n>1 are dropped",
			[]string{`{"choices":[{"index":1,"delta":{"content":"B"}},{"index":0,"delta":{"content":"A"}}]}`},
			"text \"A\"\nfinish FINISH_REASON_STOP\n"},
		{"the reasoning spelling of other servers is read",
			[]string{`{"choices":[{"index":0,"delta":{"reasoning":"hm"}}]}`},
			"reasoning \"hm\" signature=\"\"\nfinish FINISH_REASON_STOP\n"},
		{"an unknown finish reason is other",
			[]string{`{"choices":[{"index":0,"delta":{},"finish_reason":"eos"}]}`},
			"finish FINISH_REASON_OTHER\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := &chatDecoder{}
			var evs []*corev1.GenerateEvent
			for _, c := range append(tc.chunks, "[DONE]") {
				out, _, err := d.Decode(sse.Event{Data: []byte(c)})
				if err != nil {
					t.Fatal(err)
				}
				evs = append(evs, out...)
			}
			if diff := cmp.Diff(tc.want, chatFormat(evs)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestUndecodableChunkFails(t *testing.T) {
	t.Parallel()
	_, _, err := (&chatDecoder{}).Decode(sse.Event{Data: []byte(`{"choices":[`)})
	var pe *provider.Error
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want *provider.Error", err)
	}
}
