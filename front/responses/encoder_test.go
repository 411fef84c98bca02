package responses

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/")

func ev(e any) *corev1.GenerateEvent {
	switch k := e.(type) {
	case string:
		return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Text{Text: &corev1.TextDelta{Text: k}}}
	case *corev1.ReasoningDelta:
		return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Reasoning{Reasoning: k}}
	case *corev1.ToolCallStart:
		return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_ToolCall{ToolCall: k}}
	case *corev1.ToolCallDelta:
		return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_ToolArguments{ToolArguments: k}}
	case corev1.FinishReason:
		return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Finish{Finish: &corev1.Finish{Reason: k}}}
	case *corev1.Usage:
		return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Usage{Usage: k}}
	case *corev1.Native:
		return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Native{Native: k}}
	}
	panic(fmt.Sprintf("no event for %T", e))
}

func args(i int32, s string) *corev1.ToolCallDelta {
	return &corev1.ToolCallDelta{Index: i, Arguments: s}
}

// encCase is a canonical event sequence as an adapter of another protocol would produce it.
type encCase struct {
	name   string
	body   string // the client's request, for the echo fields
	events []*corev1.GenerateEvent
	fail   *corev1.StreamError // stream ends with Fail instead of Finish
}

var encCases = []encCase{
	{name: "text",
		body: `{"model":"team/model","instructions":"Be brief.","input":"Hi","max_output_tokens":64,"metadata":{"run":"7"}}`,
		events: []*corev1.GenerateEvent{ev("Hel"), ev("lo!"), ev(corev1.FinishReason_FINISH_REASON_STOP),
			ev(&corev1.Usage{InputTokens: 6, CachedInputTokens: 4, OutputTokens: 5, Reliable: true})}},
	{name: "text_and_two_tool_calls",
		body: `{"model":"team/model","input":"Weather and time in Oslo?","tools":[` +
			`{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":true},` +
			`{"type":"function","name":"get_time","parameters":{"type":"object"}}],"tool_choice":"auto","parallel_tool_calls":true}`,
		events: []*corev1.GenerateEvent{ev("Let me check."),
			ev(&corev1.ToolCallStart{Index: 0, Id: "toolu_01A", Name: "get_weather"}), ev(args(0, `{"city":`)),
			// Parallel calls whose fragments interleave, as some chat upstreams send them.
			ev(&corev1.ToolCallStart{Index: 1, Id: "toolu_01B", Name: "get_time"}), ev(args(1, `{"tz":"Europe/Oslo"}`)),
			ev(args(0, `"Oslo"}`)),
			ev(corev1.FinishReason_FINISH_REASON_TOOL_CALLS),
			ev(&corev1.Usage{InputTokens: 80, OutputTokens: 40, Reliable: true})}},
	{name: "reasoning",
		body: `{"model":"team/model","input":"2+2?","reasoning":{"effort":"medium","summary":"auto"}}`,
		events: []*corev1.GenerateEvent{
			ev(&corev1.ReasoningDelta{Text: "Adding two "}), ev(&corev1.ReasoningDelta{Text: "and two."}),
			ev(&corev1.ReasoningDelta{Signature: "EqQBCkgIAxABGAIiQL"}),
			ev(&corev1.ReasoningDelta{RedactedData: "EmwKAhgBEgy3va3pzix"}),
			ev("4"), ev(corev1.FinishReason_FINISH_REASON_STOP),
			ev(&corev1.Usage{InputTokens: 12, CacheWriteTokens: 100, OutputTokens: 30, ReasoningTokens: 22, Reliable: true})}},
	{name: "namespaced_tool_with_signature",
		body: `{"model":"team/model","input":"find Ada","tools":[{"type":"namespace","name":"crm","description":"CRM",` +
			`"tools":[{"type":"function","name":"lookup","parameters":{"type":"object"}}]},{"type":"web_search"}]}`,
		events: []*corev1.GenerateEvent{
			ev(&corev1.ToolCallStart{Index: 0, Id: "call_g1", Name: "crm__lookup", Signature: "CiQB0e2Kb"}),
			ev(&corev1.ToolCallStart{Index: 1, Id: "", Name: "crm__lookup"}),
			ev(args(0, `{"name":"Ada"}`)),
			ev(corev1.FinishReason_FINISH_REASON_TOOL_CALLS),
			ev(&corev1.Usage{InputTokens: 9, OutputTokens: 7, Reliable: true})}},
	{name: "length",
		body: `{"model":"team/model","input":"Tell a story","max_output_tokens":3}`,
		events: []*corev1.GenerateEvent{ev("Once upon a"), ev(corev1.FinishReason_FINISH_REASON_LENGTH),
			ev(&corev1.Usage{InputTokens: 4, OutputTokens: 3, Reliable: true})}},
	{name: "content_filter",
		body:   `{"model":"team/model","input":"something bad"}`,
		events: []*corev1.GenerateEvent{ev(corev1.FinishReason_FINISH_REASON_CONTENT_FILTER), ev(&corev1.Usage{InputTokens: 4, Reliable: true})}},
	{name: "fail",
		body: `{"model":"team/model","input":"Weather?","tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`,
		events: []*corev1.GenerateEvent{ev("Checking"),
			ev(&corev1.ToolCallStart{Index: 0, Id: "call_1", Name: "get_weather"}), ev(args(0, `{"ci`))},
		fail: &corev1.StreamError{Code: apierror.UpstreamError, Message: "the upstream connection failed mid-answer"}},
}

// testIDs numbers ids per prefix so that transcripts are stable.
func testIDs() func(string) string {
	n := map[string]int{}
	return func(prefix string) string {
		n[prefix]++
		return fmt.Sprintf("%s%03d", prefix, n[prefix])
	}
}

var testStart = &corev1.Start{Id: "msg_01XFDUDYJgAACzvnptvVoYEL", Model: "team/model", Created: 1761000000}

// run drives an encoder as the relay does and returns what the client received.
func run(t *testing.T, c encCase, stream bool) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	req := &corev1.GenerateRequest{Stream: stream, RawBody: []byte(c.body)}
	e := newEncoder(rec, httptest.NewRequest("POST", "/v1/responses", nil), req, false)
	e.newID = testIDs()
	e.now = func() time.Time { return time.Unix(1761000099, 0) }
	if err := e.Start(testStart); err != nil {
		t.Fatal(err)
	}
	for _, x := range c.events {
		if err := e.Event(x); err != nil {
			t.Fatal(err)
		}
	}
	if c.fail != nil {
		e.Fail(c.fail)
	} else if err := e.Finish(); err != nil {
		t.Fatal(err)
	}
	return rec
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

func TestEncoderTranscripts(t *testing.T) {
	t.Parallel()
	for _, c := range encCases {
		t.Run(c.name+"/stream", func(t *testing.T) {
			t.Parallel()
			rec := run(t, c, true)
			if ct := rec.Header().Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("Content-Type = %q", ct)
			}
			golden(t, c.name+".sse", rec.Body.Bytes())
		})
		if c.fail != nil {
			continue // Fail is never called on a non-streaming request: the relay writes the envelope
		}
		t.Run(c.name+"/json", func(t *testing.T) {
			t.Parallel()
			rec := run(t, c, false)
			if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
				t.Errorf("status %d, Content-Type %q", rec.Code, rec.Header().Get("Content-Type"))
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, rec.Body.Bytes(), "", "  "); err != nil {
				t.Fatalf("body is not JSON: %v\n%s", err, rec.Body)
			}
			pretty.WriteByte('\n')
			golden(t, c.name+".json", pretty.Bytes())
		})
	}
}

// The streamed terminal response and the non-streaming answer are the same object.
func TestEncoderStreamAndJSONAgree(t *testing.T) {
	t.Parallel()
	for _, c := range encCases {
		if c.fail != nil {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			events := sdkEvents(t, run(t, c, true).Body.Bytes(), false)
			terminal := events[len(events)-1].Response.RawJSON()
			body := run(t, c, false).Body.String()
			var a, b any
			if err := json.Unmarshal([]byte(terminal), &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(body), &b); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(b, a); diff != "" {
				t.Errorf("terminal event response (+) vs JSON answer (-):\n%s", diff)
			}
		})
	}
}

func TestEncoderCompactNeedsPassthrough(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/v1/responses/compact", nil)
	r.Header.Set("X-Request-Id", "req-1")
	e := newEncoder(rec, r, &corev1.GenerateRequest{RawBody: []byte(`{"model":"m","input":"x"}`)}, true)
	if err := e.Start(testStart); err == nil {
		t.Fatal("Start accepted a translated compaction")
	}
	var env apierror.Envelope
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 400 || env.Error.Code != apierror.InvalidRequest || env.Error.RequestID != "req-1" {
		t.Errorf("status %d, envelope %+v", rec.Code, env)
	}
}

func TestEncoderPassthrough(t *testing.T) {
	t.Parallel()
	created := []byte(`{"type":"response.created","sequence_number":0,"response":{"id":"resp_up1","object":"response","created_at":1761000001,"status":"in_progress","model":"team/model","output":[]}}`)
	delta := []byte(`{"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","unknown_field":true}`)
	completed := []byte(`{"type":"response.completed","sequence_number":2,"response":{"id":"resp_up1","status":"completed","output":[]}}`)
	start := &corev1.Start{Model: "team/model", Passthrough: true, Status: 200, ContentType: "text/event-stream"}
	usage := ev(&corev1.Usage{InputTokens: 1, Reliable: true})

	drive := func(t *testing.T, stream bool, events []*corev1.GenerateEvent, fail *corev1.StreamError) (*httptest.ResponseRecorder, error) {
		rec := httptest.NewRecorder()
		e := newEncoder(rec, httptest.NewRequest("POST", "/v1/responses", nil), &corev1.GenerateRequest{Stream: stream, RawBody: []byte(`{"model":"team/model","input":"x"}`)}, false)
		e.newID = testIDs()
		e.now = func() time.Time { return time.Unix(1761000099, 0) }
		if err := e.Start(start); err != nil {
			t.Fatal(err)
		}
		for _, x := range events {
			if err := e.Event(x); err != nil {
				t.Fatal(err)
			}
		}
		if fail != nil {
			e.Fail(fail)
			return rec, nil
		}
		return rec, e.Finish()
	}
	sseOf := func(pairs ...any) string {
		var b strings.Builder
		for i := 0; i < len(pairs); i += 2 {
			fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", pairs[i], pairs[i+1])
		}
		return b.String()
	}

	t.Run("stream events are written as the upstream sent them, named", func(t *testing.T) {
		t.Parallel()
		rec, err := drive(t, true, []*corev1.GenerateEvent{
			ev(&corev1.Native{Event: "response.created", Data: created}),
			ev(&corev1.Native{Event: "response.output_text.delta", Data: delta}),
			ev(&corev1.Native{Event: "response.completed", Data: completed}), usage}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := sseOf("response.created", created, "response.output_text.delta", delta, "response.completed", completed)
		if diff := cmp.Diff(want, rec.Body.String()); diff != "" {
			t.Errorf("body (-want +got):\n%s", diff)
		}
	})
	t.Run("a passthrough stream cut short ends with a response.failed of the upstream's response", func(t *testing.T) {
		t.Parallel()
		rec, _ := drive(t, true, []*corev1.GenerateEvent{
			ev(&corev1.Native{Event: "response.created", Data: created}),
			ev(&corev1.Native{Event: "response.output_text.delta", Data: delta})},
			&corev1.StreamError{Code: apierror.UpstreamError, Message: "the upstream stream ended before its terminal event"})
		events := sdkEvents(t, rec.Body.Bytes(), false)
		last := events[len(events)-1]
		if len(events) != 3 || last.Type != "response.failed" || last.SequenceNumber != 2 {
			t.Fatalf("events: %d, last %s #%d", len(events), last.Type, last.SequenceNumber)
		}
		r := last.Response
		if r.ID != "resp_up1" || r.CreatedAt != 1761000001 || r.Status != "failed" || string(r.Error.Code) != "upstream_error" || r.Model != "team/model" {
			t.Errorf("failed response = %s", r.RawJSON())
		}
	})
	t.Run("a failure after the upstream's own terminal event adds nothing", func(t *testing.T) {
		t.Parallel()
		rec, _ := drive(t, true, []*corev1.GenerateEvent{
			ev(&corev1.Native{Event: "response.created", Data: created}),
			ev(&corev1.Native{Event: "response.failed", Data: completed})},
			&corev1.StreamError{Code: apierror.UpstreamError, Message: "late"})
		if strings.Count(rec.Body.String(), "event: ") != 2 {
			t.Errorf("body:\n%s", rec.Body)
		}
	})
	t.Run("a non-streaming body is written verbatim with status 200", func(t *testing.T) {
		t.Parallel()
		body := []byte(`{"id":"resp_up1","object":"response","output":[],"future_field":{"x":1}}`)
		rec, err := drive(t, false, []*corev1.GenerateEvent{ev(&corev1.Native{Data: body}), usage}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Code != 200 || rec.Body.String() != string(body) {
			t.Errorf("status %d body %s", rec.Code, rec.Body)
		}
	})
	t.Run("a non-streaming answer without a body is an error for the relay to render", func(t *testing.T) {
		t.Parallel()
		if _, err := drive(t, false, []*corev1.GenerateEvent{usage}, nil); err == nil {
			t.Error("Finish accepted an empty answer")
		}
	})
}
