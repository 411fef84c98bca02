package openai

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"google.golang.org/protobuf/testing/protocmp"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
	"modelgateway/core/provider"
	"modelgateway/core/wire/sse"
)

const (
	respUpstreamModel = "gpt-5-mini"
	respPublicModel   = "team/coder"
)

// respClientBody is what a Codex-like client sends; the fields the gateway does not model must
// reach the upstream untouched.
const respClientBody = `{"model":"team/coder","stream":true,"store":false,"include":["reasoning.encrypted_content"],` +
	`"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]}],` +
	`"tools":[{"type":"web_search"}],"prompt_cache_key":"session-42","client_metadata":{"x":1}}`

func respCall(baseURL string, protocol corev1.Protocol, stream bool) *provider.Call {
	body := respClientBody
	if !stream {
		body = strings.Replace(body, `"stream":true`, `"stream":false`, 1)
	}
	return &provider.Call{
		Request: &corev1.GenerateRequest{Protocol: protocol, Stream: stream, RawBody: []byte(body), Model: respPublicModel},
		Upstream: provider.Upstream{
			PublicModel: respPublicModel, UpstreamModel: respUpstreamModel, BaseURL: baseURL, APIKey: "sk-upstream",
		},
	}
}

// respServer answers with status and body, writing the body in chunks of chunk bytes (0: all
// at once) with a flush after each, and records the request it got.
func respServer(t *testing.T, status int, contentType string, body []byte, chunk int) (*httptest.Server, *http.Request, *[]byte) {
	t.Helper()
	var got http.Request
	var gotBody []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = *r.Clone(context.Background())
		gotBody, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		if chunk <= 0 {
			_, _ = w.Write(body)
			return
		}
		rc := http.NewResponseController(w)
		for b := body; len(b) > 0; {
			n := min(chunk, len(b))
			_, _ = w.Write(b[:n])
			_ = rc.Flush()
			b = b[n:]
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &got, &gotBody
}

func respFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// respWantNatives is what the client must see for a recorded stream: every event, in order,
// named, with the public model in place of the upstream one.
func respWantNatives(t *testing.T, recorded []byte) []*corev1.GenerateEvent {
	t.Helper()
	r := sse.NewReader(bytes.NewReader(recorded))
	var out []*corev1.GenerateEvent
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data := bytes.ReplaceAll(ev.Data, []byte(`"model":"`+respUpstreamModel+`"`), []byte(`"model":"`+respPublicModel+`"`))
		out = append(out, provider.NativeEvent(ev.Name, data))
	}
}

func TestResponsesPassthroughStream(t *testing.T) {
	t.Parallel()
	recorded := respFixture(t, "responses_stream.sse")
	wantUsage := metering.Usage{Input: 512, CachedInput: 1536, Output: 300, Reasoning: 128, Reliable: true}
	for _, tc := range []struct {
		name  string
		chunk int
	}{
		{"recorded stream replayed whole", 0},
		{"recorded stream replayed one byte per write", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, got, gotBody := respServer(t, 200, "text/event-stream", recorded, tc.chunk)
			s, err := Adapter{}.Generate(t.Context(), respCall(srv.URL+"/v1/", corev1.Protocol_PROTOCOL_RESPONSES, true))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			events, err := provider.Drain(s)
			if err != nil {
				t.Fatal(err)
			}

			if got.URL.Path != "/v1/responses" {
				t.Errorf("path = %q, want /v1/responses (base URL trailing slash trimmed)", got.URL.Path)
			}
			if a := got.Header.Get("Authorization"); a != "Bearer sk-upstream" {
				t.Errorf("Authorization = %q", a)
			}
			if ua := got.Header.Get("User-Agent"); ua != provider.UserAgent {
				t.Errorf("User-Agent = %q, want the gateway's own", ua)
			}
			wantBody := strings.Replace(respClientBody, `"model":"team/coder"`, `"model":"gpt-5-mini"`, 1)
			if string(*gotBody) != wantBody {
				t.Errorf("upstream body:\n got %s\nwant %s", *gotBody, wantBody)
			}

			want := []*corev1.GenerateEvent{provider.StartEvent(&corev1.Start{Model: respPublicModel, Passthrough: true,
				Status: 200, ContentType: "text/event-stream"})}
			want = append(want, respWantNatives(t, recorded)...)
			want = append(want, provider.UsageEvent(wantUsage))
			if diff := cmp.Diff(want, events, protocmp.Transform(), protocmp.IgnoreFields(&corev1.Start{}, "created")); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantUsage, s.Usage()); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

// The decoder on its own, fed one byte per read: framing must not depend on chunk bounds.
func TestResponsesDecoderOneByteReads(t *testing.T) {
	t.Parallel()
	recorded := respFixture(t, "responses_stream.sse")
	s := provider.NewSSEStream(io.NopCloser(iotest.OneByteReader(bytes.NewReader(recorded))), &corev1.Start{},
		&responsesDecoder{upstream: respUpstreamModel, public: respPublicModel})
	events, err := provider.Drain(s)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]*corev1.GenerateEvent{provider.StartEvent(&corev1.Start{})}, respWantNatives(t, recorded)...)
	want = append(want, provider.UsageEvent(metering.Usage{Input: 512, CachedInput: 1536, Output: 300, Reasoning: 128, Reliable: true}))
	if diff := cmp.Diff(want, events, protocmp.Transform()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestResponsesPassthroughStreamEnds(t *testing.T) {
	t.Parallel()
	created := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"model\":\"gpt-5-mini\",\"output\":[]}}\n\n"
	delta := "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"delta\":\"Hi\"}\n\n"
	for _, tc := range []struct {
		name       string
		body       string
		wantNames  []string
		wantErr    bool
		wantUsage  bool // reliable usage expected
		wantInput  int64
		wantOutput int64
	}{
		{name: "a stream cut before its terminal event is an error",
			body: created + delta, wantNames: []string{"response.created", "response.output_text.delta"}, wantErr: true},
		{name: "a stream cut inside an event does not deliver the partial event",
			body: created + "event: response.output_text.delta\ndata: {\"type\":\"resp", wantNames: []string{"response.created"}, wantErr: true},
		{name: "response.failed is forwarded and ends the stream without charge",
			body:      created + "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":1,\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"boom\"},\"usage\":{\"input_tokens\":5,\"output_tokens\":1,\"total_tokens\":6}}}\n\n",
			wantNames: []string{"response.created", "response.failed"}},
		{name: "a top-level error event is forwarded and ends the stream",
			body:      created + "event: error\ndata: {\"type\":\"error\",\"sequence_number\":1,\"code\":\"rate_limit_exceeded\",\"message\":\"slow down\",\"param\":null}\n\n" + delta,
			wantNames: []string{"response.created", "error"}},
		{name: "events without event lines are named from their type, and nothing after the terminal event is read",
			body: strings.ReplaceAll(created, "event: response.created\n", "") +
				"data: {\"type\":\"response.incomplete\",\"sequence_number\":1,\"response\":{\"status\":\"incomplete\",\"usage\":{\"input_tokens\":7,\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":3,\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":10}}}\n\n" +
				"data: [DONE]\n\n" + delta,
			wantNames: []string{"response.created", "response.incomplete"}, wantUsage: true, wantInput: 7, wantOutput: 3},
		{name: "a chat-style [DONE] marker is skipped, not forwarded",
			body:      "data: [DONE]\n\n",
			wantNames: nil, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, _, _ := respServer(t, 200, "text/event-stream", []byte(tc.body), 0)
			s, err := Adapter{}.Generate(t.Context(), respCall(srv.URL+"/v1", corev1.Protocol_PROTOCOL_RESPONSES, true))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			events, err := provider.Drain(s)
			var pe *provider.Error
			if tc.wantErr != errors.As(err, &pe) {
				t.Fatalf("Drain error = %v, want a *provider.Error: %v", err, tc.wantErr)
			}
			if pe != nil && pe.Retryable {
				t.Errorf("a stream that already delivered events must not be retried: %+v", pe)
			}
			var names []string
			for _, ev := range events {
				if n := ev.GetNative(); n != nil {
					names = append(names, n.GetEvent())
					if m := gjson.GetBytes(n.GetData(), "response.model"); m.Exists() && m.String() != respPublicModel {
						t.Errorf("event %s shows model %q", n.GetEvent(), m.String())
					}
				}
			}
			if diff := cmp.Diff(tc.wantNames, names); diff != "" {
				t.Errorf("forwarded events (-want +got):\n%s", diff)
			}
			if tc.wantErr {
				return
			}
			u := s.Usage()
			if u.Reliable != tc.wantUsage || u.Input != tc.wantInput || u.Output != tc.wantOutput {
				t.Errorf("usage = %+v, want reliable=%v input=%d output=%d", u, tc.wantUsage, tc.wantInput, tc.wantOutput)
			}
		})
	}
}

func TestResponsesPassthroughNonStreaming(t *testing.T) {
	t.Parallel()
	answer := respFixture(t, "responses_nonstream.json")
	compact := []byte(`{"id":"resp_9","object":"response.compaction","created_at":1764967971,"output":[` +
		`{"id":"msg_0","type":"message","role":"user","status":"completed","content":[{"type":"input_text","text":"first"}]},` +
		`{"id":"cmp_1","type":"compaction","encrypted_content":"gAAAA"}],` +
		`"usage":{"input_tokens":139,"input_tokens_details":{"cached_tokens":0},"output_tokens":438,"output_tokens_details":{"reasoning_tokens":64},"total_tokens":577}}`)
	for _, tc := range []struct {
		name     string
		protocol corev1.Protocol
		answer   []byte
		path     string
		usage    metering.Usage
	}{
		{"a response object comes back whole, model rewritten, usage with cached tokens split out",
			corev1.Protocol_PROTOCOL_RESPONSES, answer, "/v1/responses",
			metering.Usage{Input: 512, CachedInput: 1536, Output: 300, Reasoning: 128, Reliable: true}},
		{"compaction goes to the compact route and its usage is metered",
			corev1.Protocol_PROTOCOL_RESPONSES_COMPACT, compact, "/v1/responses/compact",
			metering.Usage{Input: 139, Output: 438, Reasoning: 64, Reliable: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, got, _ := respServer(t, 200, "application/json", tc.answer, 0)
			s, err := Adapter{}.Generate(t.Context(), respCall(srv.URL+"/v1", tc.protocol, false))
			if err != nil {
				t.Fatal(err)
			}
			events, err := provider.Drain(s)
			if err != nil {
				t.Fatal(err)
			}
			if got.URL.Path != tc.path {
				t.Errorf("path = %q, want %q", got.URL.Path, tc.path)
			}
			if a := got.Header.Get("Accept"); a != "application/json" {
				t.Errorf("Accept = %q", a)
			}
			wantData := bytes.Replace(tc.answer, []byte(`"model":"gpt-5-mini"`), []byte(`"model":"team/coder"`), 1)
			want := []*corev1.GenerateEvent{
				provider.StartEvent(&corev1.Start{Model: respPublicModel, Passthrough: true, Status: 200, ContentType: "application/json"}),
				provider.NativeEvent("", wantData),
				provider.UsageEvent(tc.usage),
			}
			if diff := cmp.Diff(want, events, protocmp.Transform(), protocmp.IgnoreFields(&corev1.Start{}, "created")); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResponsesPassthroughUpstreamRefusal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		status        int
		body          string
		wantRetryable bool
		wantMessage   string
	}{
		{"429 is retryable on another route and keeps the upstream's message", 429,
			`{"error":{"message":"Rate limit reached for gpt-5-mini","type":"requests","code":"rate_limit_exceeded"}}`,
			true, "upstream status 429: Rate limit reached for gpt-5-mini"},
		{"400 is final", 400, `{"error":{"message":"Invalid input","type":"invalid_request_error"}}`,
			false, "upstream status 400: Invalid input"},
		{"401 never shows the upstream's words", 401, `{"error":{"message":"Incorrect API key provided: sk-upst****"}}`,
			false, "the upstream refused the gateway's credentials (status 401)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, _, _ := respServer(t, tc.status, "application/json", []byte(tc.body), 0)
			_, err := Adapter{}.Generate(t.Context(), respCall(srv.URL+"/v1", corev1.Protocol_PROTOCOL_RESPONSES, true))
			var pe *provider.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *provider.Error", err)
			}
			if pe.Status != tc.status || pe.Retryable != tc.wantRetryable || pe.Message != tc.wantMessage {
				t.Errorf("error = {status %d retryable %v message %q}, want {%d %v %q}",
					pe.Status, pe.Retryable, pe.Message, tc.status, tc.wantRetryable, tc.wantMessage)
			}
		})
	}
}

func TestResponsesPassthroughSendsNoKeyWhenNoneIsConfigured(t *testing.T) {
	t.Parallel()
	srv, got, _ := respServer(t, 200, "application/json", respFixture(t, "responses_nonstream.json"), 0)
	call := respCall(srv.URL+"/v1", corev1.Protocol_PROTOCOL_RESPONSES, false)
	call.APIKey = ""
	s, err := Adapter{}.Generate(t.Context(), call)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if a, ok := got.Header["Authorization"]; ok {
		t.Errorf("Authorization = %q, want none", a)
	}
}
