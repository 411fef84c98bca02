package anthropic

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
	"modelgateway/core/provider"
	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/sse"
)

func chatRequest(stream bool) *corev1.GenerateRequest {
	return &corev1.GenerateRequest{
		Protocol: corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS, EndpointFamily: "chat.completions", Model: publicModel, Stream: stream,
		Messages:       []*corev1.Message{{Role: corev1.Role_ROLE_USER, Parts: []*corev1.Part{{Kind: &corev1.Part_Text{Text: "Hi"}}}}},
		ForwardHeaders: map[string]string{"anthropic-beta": "must-not-be-sent"},
	}
}

func usageEvent(in, cached, write, out int64) *corev1.GenerateEvent {
	return provider.UsageEvent(metering.Usage{Input: in, CachedInput: cached, CacheWrite: write, Output: out, Reliable: true})
}

var ignoreCreated = protocmp.IgnoreFields(&corev1.Start{}, "created")

func TestTranslatedStreamReplays(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file string
		want []*corev1.GenerateEvent
	}{
		{
			// Cache usage arrives in message_start and again, cumulative, in message_delta: it
			// is counted once. The tool after a text block is tool 0, not block 1.
			file: "text_tool.sse",
			want: []*corev1.GenerateEvent{
				provider.StartEvent(&corev1.Start{Id: "msg_01XFDUDYJgAACzvnptvVoYEL", Model: publicModel}),
				provider.TextEvent("Let me check "), provider.TextEvent("the weather."),
				provider.ToolCallEvent(0, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather", ""),
				provider.ToolArgsEvent(0, `{"city": "Os`), provider.ToolArgsEvent(0, `lo"}`),
				provider.FinishEvent(corev1.FinishReason_FINISH_REASON_TOOL_CALLS, ""),
				usageEvent(412, 2000, 50, 61),
			},
		},
		{
			// Thinking text and signature come through; a tool whose input never streamed gets
			// "{}"; input tokens known only from message_start survive a message_delta without them.
			file: "thinking_tools.sse",
			want: []*corev1.GenerateEvent{
				provider.StartEvent(&corev1.Start{Id: "msg_01Think", Model: publicModel}),
				provider.ReasoningEvent("Two lookups are needed", ""), provider.ReasoningEvent(", in parallel.", ""),
				provider.ReasoningEvent("", "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"),
				provider.ToolCallEvent(0, "toolu_A", "get_weather", ""), provider.ToolArgsEvent(0, `{"city":"Oslo"}`),
				provider.ToolCallEvent(1, "toolu_B", "get_time", ""), provider.ToolArgsEvent(1, `{}`),
				provider.FinishEvent(corev1.FinishReason_FINISH_REASON_TOOL_CALLS, ""),
				usageEvent(90, 0, 0, 120),
			},
		},
		{
			file: "stop_sequence.sse",
			want: []*corev1.GenerateEvent{
				provider.StartEvent(&corev1.Start{Id: "msg_01Stop", Model: publicModel}),
				provider.TextEvent("1, 2, 3"),
				provider.FinishEvent(corev1.FinishReason_FINISH_REASON_STOP_SEQUENCE, "4"),
				usageEvent(12, 0, 0, 8),
			},
		},
	}
	for _, c := range cases {
		for _, ch := range chunkings {
			t.Run(c.file+" "+ch.name, func(t *testing.T) {
				t.Parallel()
				up := &upstream{body: readFile(t, c.file), oneByte: ch.oneByte}
				s, err := Adapter{}.Generate(context.Background(), newCall(serve(t, up), chatRequest(true)))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				got, err := provider.Drain(s)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(c.want, got, protocmp.Transform(), ignoreCreated); diff != "" {
					t.Errorf("events (-want +got)\n%s", diff)
				}
				if u := s.Usage(); !u.Reliable {
					t.Errorf("usage unreliable: %s", u.Why)
				}
			})
		}
	}
}

func TestPassthroughStreamCopiesEveryEvent(t *testing.T) {
	t.Parallel()
	recording := readFile(t, "text_tool.sse")
	// What the client must see: every upstream event, the model renamed in message_start.
	var want []*corev1.GenerateEvent
	r := sse.NewReader(bytes.NewReader(recording))
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		want = append(want, provider.NativeEvent(ev.Name, bytes.ReplaceAll(ev.Data, []byte(upstreamModel), []byte(publicModel))))
	}
	want = append(want, usageEvent(412, 2000, 50, 61))

	raw := `{"model":"claude-public","max_tokens":32000,"stream":true,"messages":[{"role":"user","content":"Hi"}],"context_management":{"edits":[]},"thinking":{"type":"adaptive"}}`
	for _, ch := range chunkings {
		t.Run(ch.name, func(t *testing.T) {
			t.Parallel()
			up := &upstream{body: recording, oneByte: ch.oneByte}
			req := &corev1.GenerateRequest{
				Protocol: corev1.Protocol_PROTOCOL_MESSAGES, Model: publicModel, Stream: true, RawBody: []byte(raw),
				ForwardHeaders: map[string]string{"anthropic-beta": "context-management-2025-06-27,oauth"},
			}
			s, err := Adapter{}.Generate(context.Background(), newCall(serve(t, up), req))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got, err := provider.Drain(s)
			if err != nil {
				t.Fatal(err)
			}
			start := got[0].GetStart()
			if !start.GetPassthrough() || start.GetStatus() != 200 || start.GetContentType() != "text/event-stream" || start.GetModel() != publicModel {
				t.Errorf("start = %v", start)
			}
			if diff := cmp.Diff(want, got[1:], protocmp.Transform()); diff != "" {
				t.Errorf("events (-want +got)\n%s", diff)
			}
			sent := up.last(t)
			wantBody := strings.Replace(raw, `"model":"claude-public"`, `"model":"`+upstreamModel+`"`, 1)
			if string(sent.Body) != wantBody {
				t.Errorf("sent body\n%s\nwant\n%s", sent.Body, wantBody)
			}
			if got := sent.Header.Get("anthropic-beta"); got != "context-management-2025-06-27,oauth" {
				t.Errorf("anthropic-beta = %q", got)
			}
		})
	}
}

func TestNonStreamingAnswers(t *testing.T) {
	t.Parallel()
	body := readFile(t, "message.json")
	t.Run("translated", func(t *testing.T) {
		t.Parallel()
		up := &upstream{body: body, contentType: "application/json"}
		s, err := Adapter{}.Generate(context.Background(), newCall(serve(t, up), chatRequest(false)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := provider.Drain(s)
		if err != nil {
			t.Fatal(err)
		}
		want := []*corev1.GenerateEvent{
			provider.StartEvent(&corev1.Start{Id: "msg_01Whole", Model: publicModel}),
			provider.ReasoningEvent("Hmm.", "sig=="),
			{Event: &corev1.GenerateEvent_Reasoning{Reasoning: &corev1.ReasoningDelta{RedactedData: "opaque"}}},
			provider.TextEvent("Checking."),
			provider.ToolCallEvent(0, "toolu_01", "get_weather", ""), provider.ToolArgsEvent(0, `{"city":"Oslo"}`),
			provider.FinishEvent(corev1.FinishReason_FINISH_REASON_TOOL_CALLS, ""),
			usageEvent(412, 100, 7, 61),
		}
		if diff := cmp.Diff(want, got, protocmp.Transform(), ignoreCreated); diff != "" {
			t.Errorf("events (-want +got)\n%s", diff)
		}
		if accept := up.last(t).Header.Get("Accept"); accept != "application/json" {
			t.Errorf("Accept = %q", accept)
		}
	})
	t.Run("passthrough is the body verbatim but for the model", func(t *testing.T) {
		t.Parallel()
		up := &upstream{body: body, contentType: "application/json"}
		req := &corev1.GenerateRequest{Protocol: corev1.Protocol_PROTOCOL_MESSAGES, Model: publicModel, RawBody: []byte(`{"model":"x","max_tokens":5,"messages":[]}`)}
		s, err := Adapter{}.Generate(context.Background(), newCall(serve(t, up), req))
		if err != nil {
			t.Fatal(err)
		}
		got, err := provider.Drain(s)
		if err != nil {
			t.Fatal(err)
		}
		want := []*corev1.GenerateEvent{
			provider.NativeEvent("", bytes.Replace(body, []byte(`"model":"`+upstreamModel+`"`), []byte(`"model":"`+publicModel+`"`), 1)),
			usageEvent(412, 100, 7, 61),
		}
		if diff := cmp.Diff(want, got[1:], protocmp.Transform()); diff != "" {
			t.Errorf("events (-want +got)\n%s", diff)
		}
	})
}

func TestBrokenStreamsAreErrors(t *testing.T) {
	t.Parallel()
	protocols := map[string]*corev1.GenerateRequest{
		"translated":  chatRequest(true),
		"passthrough": {Protocol: corev1.Protocol_PROTOCOL_MESSAGES, Model: publicModel, Stream: true, RawBody: []byte(`{"model":"m"}`)},
	}
	for pname, req := range protocols {
		for _, ch := range chunkings {
			t.Run(pname+" cut before message_stop "+ch.name, func(t *testing.T) {
				t.Parallel()
				up := &upstream{body: readFile(t, "cut.sse"), oneByte: ch.oneByte}
				s, err := Adapter{}.Generate(context.Background(), newCall(serve(t, up), req))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				_, err = provider.Drain(s)
				var pe *provider.Error
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v, want a *provider.Error", err)
				}
				if s.Usage().Reliable {
					t.Error("a cut stream's usage must be unreliable")
				}
			})
			t.Run(pname+" error event mid-stream "+ch.name, func(t *testing.T) {
				t.Parallel()
				up := &upstream{body: readFile(t, "error_mid.sse"), oneByte: ch.oneByte}
				s, err := Adapter{}.Generate(context.Background(), newCall(serve(t, up), req))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				_, err = provider.Drain(s)
				var pe *provider.Error
				if !errors.As(err, &pe) || pe.Status != 529 || !strings.Contains(pe.Message, "Overloaded") {
					t.Fatalf("err = %#v, want the upstream's overloaded error", err)
				}
			})
			t.Run(pname+" error event before anything is a retryable failure "+ch.name, func(t *testing.T) {
				t.Parallel()
				up := &upstream{body: readFile(t, "error_first.sse"), oneByte: ch.oneByte}
				_, err := Adapter{}.Generate(context.Background(), newCall(serve(t, up), req))
				var pe *provider.Error
				if !errors.As(err, &pe) || !pe.Retryable || pe.Status != 529 {
					t.Fatalf("err = %#v, want a retryable 529", err)
				}
			})
		}
	}
}

func TestUpstreamStatuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		status    int
		body      string
		retryable bool
	}{
		{"overloaded 529 is retryable", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, true},
		{"rate limited 429 is retryable", 429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, true},
		{"a bad request is final", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			up := &upstream{status: c.status, body: []byte(c.body), contentType: "application/json"}
			_, err := Adapter{}.Generate(context.Background(), newCall(serve(t, up), chatRequest(true)))
			var pe *provider.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v", err)
			}
			if pe.Status != c.status || pe.Retryable != c.retryable {
				t.Errorf("status %d retryable %v, want %d %v", pe.Status, pe.Retryable, c.status, c.retryable)
			}
		})
	}
}

func TestRequestHeaders(t *testing.T) {
	t.Parallel()
	up := &upstream{body: readFile(t, "stop_sequence.sse")}
	s, err := Adapter{}.Generate(context.Background(), newCall(serve(t, up), chatRequest(true)))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	got := up.last(t)
	checks := []struct{ header, want string }{
		{"x-api-key", testKey},
		{"anthropic-version", "2023-06-01"},
		{"User-Agent", provider.UserAgent}, // never the client's
		{"Content-Type", "application/json"},
		{"Accept", "text/event-stream"},
		{"anthropic-beta", ""}, // beta flags only go with the client's own body
		{"Authorization", ""},
	}
	for _, c := range checks {
		if v := got.Header.Get(c.header); v != c.want {
			t.Errorf("%s = %q, want %q", c.header, v, c.want)
		}
	}
	if got.Path != "/v1/messages" {
		t.Errorf("path %q", got.Path)
	}
}

func TestNoKeyNoKeyHeader(t *testing.T) {
	t.Parallel()
	up := &upstream{body: readFile(t, "stop_sequence.sse")}
	call := newCall(serve(t, up), chatRequest(true))
	call.APIKey = ""
	s, err := Adapter{}.Generate(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, ok := up.last(t).Header["X-Api-Key"]; ok {
		t.Error("x-api-key sent without a key")
	}
}

func TestCompactNeedsAnOpenAIUpstream(t *testing.T) {
	t.Parallel()
	req := &corev1.GenerateRequest{Protocol: corev1.Protocol_PROTOCOL_RESPONSES_COMPACT, Model: publicModel}
	_, err := Adapter{}.Generate(context.Background(), newCall("http://127.0.0.1:1", req))
	var ae *apierror.Error
	if !errors.As(err, &ae) || ae.Code != apierror.InvalidRequest {
		t.Fatalf("err = %v, want invalid_request_error", err)
	}
}

func TestCountTokens(t *testing.T) {
	t.Parallel()
	t.Run("passthrough sends the client's body", func(t *testing.T) {
		t.Parallel()
		up := &upstream{body: []byte(`{"input_tokens":2095}`), contentType: "application/json"}
		req := &corev1.GenerateRequest{Protocol: corev1.Protocol_PROTOCOL_MESSAGES, Model: publicModel,
			RawBody: []byte(`{"model":"claude-public","messages":[{"role":"user","content":"Hi"}],"x":1}`)}
		n, err := Adapter{}.CountTokens(context.Background(), newCall(serve(t, up), req))
		if err != nil || n != 2095 {
			t.Fatalf("n = %d, err = %v", n, err)
		}
		got := up.last(t)
		if got.Path != "/v1/messages/count_tokens" || string(got.Body) != `{"model":"`+upstreamModel+`","messages":[{"role":"user","content":"Hi"}],"x":1}` {
			t.Errorf("path %s body %s", got.Path, got.Body)
		}
	})
	t.Run("another protocol is translated without generation controls", func(t *testing.T) {
		t.Parallel()
		up := &upstream{body: []byte(`{"input_tokens":7}`), contentType: "application/json"}
		req := chatRequest(false)
		req.System = "Be brief."
		req.MaxOutputTokens = new(int64(5))
		n, err := Adapter{}.CountTokens(context.Background(), newCall(serve(t, up), req))
		if err != nil || n != 7 {
			t.Fatalf("n = %d, err = %v", n, err)
		}
		want := `{"model":"` + upstreamModel + `","messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],"system":[{"type":"text","text":"Be brief."}]}`
		if got := string(up.last(t).Body); got != want {
			t.Errorf("body\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("upstream failure is a provider error", func(t *testing.T) {
		t.Parallel()
		up := &upstream{status: http.StatusTooManyRequests, body: []byte(`{}`), contentType: "application/json"}
		_, err := Adapter{}.CountTokens(context.Background(), newCall(serve(t, up), chatRequest(false)))
		var pe *provider.Error
		if !errors.As(err, &pe) || !pe.Retryable {
			t.Fatalf("err = %v", err)
		}
	})
}
