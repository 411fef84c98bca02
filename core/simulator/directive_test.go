package simulator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Directives in the last user text, driven over raw HTTP as the gateway would forward them.

// streamRequest is a streaming request per protocol whose user text is text, and the event
// that ends it normally.
type streamRequest struct {
	name, path, terminal string
	body                 func(text string) string
}

var streamRequests = []streamRequest{
	{"chat", "/v1/chat/completions", "[DONE]", func(s string) string {
		return `{"model":"m","stream":true,"messages":[{"role":"user","content":` + q(s) + `}]}`
	}},
	{"completions", "/v1/completions", "[DONE]", func(s string) string {
		return `{"model":"m","stream":true,"prompt":` + q(s) + `}`
	}},
	{"responses", "/v1/responses", "response.completed", func(s string) string {
		return `{"model":"m","stream":true,"input":` + q(s) + `}`
	}},
	{"messages", "/v1/messages", "message_stop", func(s string) string {
		return `{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":` + q(s) + `}]}`
	}},
	{"gemini", "/v1beta/models/g:streamGenerateContent?alt=sse", `"finishReason"`, func(s string) string {
		return `{"contents":[{"role":"user","parts":[{"text":` + q(s) + `}]}]}`
	}},
}

func q(s string) string { return string(mustJSON(s)) }

func TestFailDirectiveUsesEachProtocolsErrorBody(t *testing.T) {
	t.Parallel()
	_, url := start(t, Options{})
	cases := []struct {
		name, path, body string
		status           int
		want             string // the body with the message replaced by "M"
	}{
		{"chat", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"#sim:fail=500"}]}`, 500,
			`{"error":{"message":"M","type":"server_error","param":null,"code":null}}`},
		{"chat rate limit", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"#sim:fail=429"}]}`, 429,
			`{"error":{"message":"M","type":"requests","param":null,"code":"rate_limit_exceeded"}}`},
		{"responses", "/v1/responses", `{"model":"m","input":"#sim:fail=401"}`, 401,
			`{"error":{"message":"M","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`},
		{"embeddings", "/v1/embeddings", `{"model":"m","input":"#sim:fail=400"}`, 400,
			`{"error":{"message":"M","type":"invalid_request_error","param":null,"code":null}}`},
		{"messages", "/v1/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"#sim:fail=429"}]}`, 429,
			`{"type":"error","error":{"type":"rate_limit_error","message":"M"},"request_id":"req_sim429"}`},
		{"count tokens", "/v1/messages/count_tokens", `{"model":"m","messages":[{"role":"user","content":"#sim:fail=404"}]}`, 404,
			`{"type":"error","error":{"type":"not_found_error","message":"M"},"request_id":"req_sim404"}`},
		{"gemini", "/v1beta/models/g:generateContent", `{"contents":[{"parts":[{"text":"#sim:fail=429"}]}]}`, 429,
			`{"error":{"code":429,"message":"M","status":"RESOURCE_EXHAUSTED"}}`},
		{"gemini stream", "/v1beta/models/g:streamGenerateContent?alt=sse", `{"contents":[{"parts":[{"text":"#sim:fail=500"}]}]}`, 500,
			`{"error":{"code":500,"message":"M","status":"INTERNAL"}}`},
		{"gemini embed", "/v1beta/models/g:embedContent", `{"content":{"parts":[{"text":"#sim:fail=403"}]}}`, 403,
			`{"error":{"code":403,"message":"M","status":"PERMISSION_DENIED"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, h, raw, err := post(t, url, tc.path, tc.body)
			if err != nil || status != tc.status || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
				t.Fatalf("status %d (%v), content type %q", status, err, h.Get("Content-Type"))
			}
			msg := failMessage(tc.status)
			if !bytes.Contains(raw, []byte(msg)) {
				t.Fatalf("body does not carry the message %q: %s", msg, raw)
			}
			got := strings.Replace(string(raw), msg, "M", 1)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("error body (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCutDropsTheConnectionHalfWay(t *testing.T) {
	t.Parallel()
	_, url := start(t, Options{})
	for _, r := range streamRequests {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			status, _, raw, err := post(t, url, r.path, r.body("go #sim:cut"))
			if status != 200 || err == nil {
				t.Fatalf("status %d, read error %v: the connection must drop", status, err)
			}
			if bytes.Contains(raw, []byte(r.terminal)) {
				t.Errorf("cut stream has its terminal event:\n%s", raw)
			}
			if n := chunkWords(raw); n != 6 {
				t.Errorf("%d of 12 words before the cut, want 6", n)
			}
			// The clean variant ends the body without an error, still without the terminal.
			status, _, raw, err = post(t, url, r.path, r.body("go #sim:cut=eof"))
			if status != 200 || err != nil || bytes.Contains(raw, []byte(r.terminal)) || chunkWords(raw) != 6 {
				t.Errorf("cut=eof: status %d, err %v:\n%s", status, err, raw)
			}
		})
	}
}

// chunkWords counts the streamed answer words: every word but the first starts with a space
// inside a JSON string.
func chunkWords(raw []byte) int {
	return bytes.Count(raw, []byte(`"Simulated"`)) + bytes.Count(raw, []byte(`":" `)) + bytes.Count(raw, []byte(`": " `))
}

func TestCutOnANonStreamingAnswerSendsHalfTheBody(t *testing.T) {
	t.Parallel()
	_, url := start(t, Options{})
	status, _, raw, err := post(t, url, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"#sim:cut"}]}`)
	if status != 200 || err == nil || json.Valid(raw) {
		t.Errorf("status %d, err %v, body %s", status, err, raw)
	}
}

func TestErrorMidEndsTheStreamAfterTheFirstChunk(t *testing.T) {
	t.Parallel()
	_, url := start(t, Options{})
	want := map[string]string{
		"chat":        "data: {\"error\":{\"message\":\"simulated mid-stream failure (#sim:error-mid)\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n",
		"completions": "data: {\"error\":{\"message\":\"simulated mid-stream failure (#sim:error-mid)\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n",
		"responses":   "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"simulated mid-stream failure (#sim:error-mid)\",\"param\":null,\"sequence_number\":5}\n\n",
		"messages":    "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"simulated mid-stream failure (#sim:error-mid)\"}}\n\n",
		"gemini":      "data: {\"error\":{\"code\":503,\"message\":\"simulated mid-stream failure (#sim:error-mid)\",\"status\":\"UNAVAILABLE\"}}\r\n\r\n",
	}
	for _, r := range streamRequests {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			raw := mustPost(t, url, r.path, r.body("go #sim:error-mid"))
			if !bytes.HasSuffix(raw, []byte(want[r.name])) {
				t.Errorf("stream does not end with the error event %q:\n%s", want[r.name], raw)
			}
			if n := chunkWords(raw); n != 1 {
				t.Errorf("%d words before the error, want 1", n)
			}
		})
	}
	raw := mustPost(t, url, "/v1/messages", streamRequests[3].body("#sim:error-mid=429"))
	if !bytes.Contains(raw, []byte(`"rate_limit_error"`)) {
		t.Errorf("error-mid=429 does not pick the rate-limit error:\n%s", raw)
	}
}

// timedStream reads a stream and returns when its first and its last byte arrived.
func timedStream(t *testing.T, url, path, body string) (headers, first, last time.Duration) {
	t.Helper()
	begin := time.Now()
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	headers = time.Since(begin)
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadByte(); err != nil {
		t.Fatal(err)
	}
	first = time.Since(begin)
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Fatal(err)
	}
	return headers, first, time.Since(begin)
}

func TestDelays(t *testing.T) {
	t.Parallel()
	const d = 150 * time.Millisecond
	body := func(text string) string { return streamRequests[0].body(text) }
	t.Run("delay directive holds the headers", func(t *testing.T) {
		t.Parallel()
		_, url := start(t, Options{})
		if h, _, _ := timedStream(t, url, "/v1/chat/completions", body("#sim:delay=150ms")); h < d {
			t.Errorf("headers after %v, want at least %v", h, d)
		}
	})
	t.Run("first-byte delay option holds the headers", func(t *testing.T) {
		t.Parallel()
		_, url := start(t, Options{FirstByteDelay: d})
		if h, _, _ := timedStream(t, url, "/v1/chat/completions", body("hi")); h < d {
			t.Errorf("headers after %v, want at least %v", h, d)
		}
	})
	t.Run("stall pauses after the first chunk", func(t *testing.T) {
		t.Parallel()
		_, url := start(t, Options{})
		_, first, last := timedStream(t, url, "/v1/chat/completions", body("#sim:stall=150ms"))
		if first >= d || last < d {
			t.Errorf("first byte after %v, end after %v; want the pause between them", first, last)
		}
	})
	t.Run("stall delays a non-streaming answer", func(t *testing.T) {
		t.Parallel()
		_, url := start(t, Options{})
		if h, _, _ := timedStream(t, url, "/v1/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"#sim:stall=150ms"}]}`); h < d {
			t.Errorf("answer after %v, want at least %v", h, d)
		}
	})
	t.Run("chunk delay paces every chunk", func(t *testing.T) {
		t.Parallel()
		_, url := start(t, Options{ChunkDelay: 10 * time.Millisecond, Words: 6})
		if _, _, last := timedStream(t, url, "/v1/chat/completions", body("hi")); last < 50*time.Millisecond {
			t.Errorf("6 chunks 10ms apart took %v", last)
		}
	})
}

// A client that leaves during a stall must not keep the handler waiting.
func TestClientLeavingEndsTheHandler(t *testing.T) {
	t.Parallel()
	done := make(chan struct{})
	sim := New(Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/messages", strings.NewReader(streamRequests[3].body("#sim:stall=1h")))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = resp.Body.Read(make([]byte, 64))
	cancel()
	resp.Body.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler still runs after the client left")
	}
}

func TestCacheDirectiveAcrossProtocols(t *testing.T) {
	t.Parallel()
	_, url := start(t, Options{})
	text := "a prompt of forty bytes #sim:cache=4...." // 40 bytes = 10 tokens
	cases := []struct {
		path, body, want string
	}{
		{"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":` + q(text) + `}]}`, `"prompt_tokens":10,`},
		{"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":` + q(text) + `}]}`, `"cached_tokens":4,`},
		{"/v1/responses", `{"model":"m","input":` + q(text) + `}`, `"input_tokens":10,"input_tokens_details":{"cached_tokens":4}`},
		{"/v1/messages", `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":` + q(text) + `}]}`, `"input_tokens":6,"cache_creation_input_tokens":0,"cache_read_input_tokens":4`},
		{"/v1beta/models/g:generateContent", `{"contents":[{"parts":[{"text":` + q(text) + `}]}]}`, `"promptTokenCount":10,"candidatesTokenCount":12,"totalTokenCount":22,"cachedContentTokenCount":4`},
	}
	for _, tc := range cases {
		if raw := mustPost(t, url, tc.path, tc.body); !bytes.Contains(raw, []byte(tc.want)) {
			t.Errorf("%s: want %s in\n%s", tc.path, tc.want, raw)
		}
	}
}

// #sim:input=N stands for usage the request does not show (images, provider-side system
// prompts): every protocol reports N input tokens for a two-word prompt.
func TestInputDirectiveReportsMoreThanThePrompt(t *testing.T) {
	t.Parallel()
	_, url := start(t, Options{})
	text := "hi #sim:input=1000"
	cases := []struct {
		path, body, want string
	}{
		{"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":` + q(text) + `}]}`, `"prompt_tokens":1000,`},
		{"/v1/responses", `{"model":"m","input":` + q(text) + `}`, `"input_tokens":1000,`},
		{"/v1/messages", `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":` + q(text) + `}]}`, `"input_tokens":1000,`},
		{"/v1beta/models/g:generateContent", `{"contents":[{"parts":[{"text":` + q(text) + `}]}]}`, `"promptTokenCount":1000,`},
	}
	for _, tc := range cases {
		if raw := mustPost(t, url, tc.path, tc.body); !bytes.Contains(raw, []byte(tc.want)) {
			t.Errorf("%s: want %s in\n%s", tc.path, tc.want, raw)
		}
	}
}

func TestRecordsRequests(t *testing.T) {
	t.Parallel()
	sim, url := start(t, Options{})
	if sim.LastHeaders() != nil || sim.Requests("") != 0 {
		t.Fatal("a fresh simulator has recorded something")
	}
	req, _ := http.NewRequest("POST", url+"/v1/messages?beta=true", strings.NewReader(streamRequests[3].body("hi")))
	req.Header.Set("User-Agent", "probe/1")
	req.Header.Set("X-Api-Key", "secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if h := sim.LastHeaders(); h.Get("User-Agent") != "probe/1" || h.Get("X-Api-Key") != "secret" {
		t.Errorf("last headers %v", h)
	}
	mustPost(t, url, "/v1/chat/completions", streamRequests[0].body("hi"))
	mustPost(t, url, "/v1/chat/completions", streamRequests[0].body("bye"))
	if sim.Requests("/v1/messages") != 1 || sim.Requests("/v1/chat/completions") != 2 || sim.Requests("") != 3 || sim.Requests("/v1/responses") != 0 {
		t.Errorf("counts: messages %d, chat %d, total %d", sim.Requests("/v1/messages"), sim.Requests("/v1/chat/completions"), sim.Requests(""))
	}
	if h := sim.LastHeaders(); h.Get("User-Agent") == "probe/1" || h.Get("X-Api-Key") != "" {
		t.Errorf("last headers still those of an earlier request: %v", h)
	}
	if !strings.Contains(string(sim.LastBody()), `"bye"`) {
		t.Errorf("last body %s", sim.LastBody())
	}
}

func TestRoutingErrors(t *testing.T) {
	t.Parallel()
	_, url := start(t, Options{})
	cases := []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"unknown OpenAI path", "POST", "/v1/nope", `{}`, 404, `"type":"invalid_request_error"`},
		{"unknown Gemini method", "POST", "/v1beta/models/g:nope", `{}`, 404, `"status":"NOT_FOUND"`},
		{"GET on a POST route", "GET", "/v1/messages", ``, 405, `"type":"error"`},
		{"invalid JSON, OpenAI", "POST", "/v1/responses", `{"model":`, 400, `"type":"invalid_request_error"`},
		{"invalid JSON, Anthropic", "POST", "/v1/messages", `[`, 400, `"type":"invalid_request_error"`},
		{"invalid JSON, Gemini", "POST", "/v1beta/models/g:countTokens", `{`, 400, `"status":"INVALID_ARGUMENT"`},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(tc.method, url+tc.path, strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !bytes.Contains(raw, []byte(tc.want)) {
			t.Errorf("%s: %d %s", tc.name, resp.StatusCode, raw)
		}
	}
}

// The REST API takes snake_case as well as camelCase field names.
func TestGeminiSnakeCaseRequest(t *testing.T) {
	t.Parallel()
	_, url := start(t, Options{})
	raw := mustPost(t, url, "/v1beta/models/g:generateContent", `{"system_instruction":{"parts":[{"text":"sys"}]},
		"contents":[{"role":"user","parts":[{"text":"go"}]}],"generation_config":{"max_output_tokens":2},
		"tools":[{"function_declarations":[{"name":"f","parameters_json_schema":{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}}]}],
		"tool_config":{"function_calling_config":{"mode":"NONE"}}}`)
	if !bytes.Contains(raw, []byte(`"finishReason":"MAX_TOKENS"`)) || bytes.Contains(raw, []byte("functionCall")) {
		t.Errorf("snake_case config ignored: %s", raw)
	}
	raw = mustPost(t, url, "/v1beta/models/g:generateContent", `{"contents":[{"role":"user","parts":[{"text":"go"}]}],
		"tools":[{"function_declarations":[{"name":"f","parameters_json_schema":{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}}]}]}`)
	if !bytes.Contains(raw, []byte(`"functionCall":{"name":"f","args":{"n":1}}`)) {
		t.Errorf("snake_case tools ignored: %s", raw)
	}
	raw = mustPost(t, url, "/v1beta/models/g:countTokens", `{"generate_content_request":{"model":"models/g","contents":[{"parts":[{"text":"twelve bytes"}]}]}}`)
	if !bytes.Contains(raw, []byte(`"totalTokens":3`)) {
		t.Errorf("wrapped countTokens: %s", raw)
	}
}
