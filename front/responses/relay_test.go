package responses

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/front/relay"
)

// fakeCore answers Generate with fixed events, as core would after routing.
type fakeCore struct {
	events []*corev1.GenerateEvent
	got    *corev1.GenerateRequest
}

func (f *fakeCore) generate(in *corev1.GenerateRequest, stream corev1.CoreService_GenerateServer) error {
	f.got = in
	for _, ev := range f.events {
		if err := stream.Send(ev); err != nil {
			return nil // the client went away: core stops quietly
		}
	}
	return nil
}

func serve(t *testing.T, p Protocol, body string, events ...*corev1.GenerateEvent) (*httptest.ResponseRecorder, *fakeCore) {
	t.Helper()
	core := &fakeCore{events: events}
	h := &relay.Handler{Generate: core.generate, Proto: p, Limit: 1 << 20, Family: p.Family()}
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/v1/responses", strings.NewReader(body))
	r.Header.Set("X-Request-Id", "req-7")
	h.ServeHTTP(rec, r)
	return rec, core
}

func start(s *corev1.Start) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Start{Start: s}}
}

func TestThroughRelay(t *testing.T) {
	t.Parallel()
	t.Run("a translated stream that fails mid-answer still ends with a terminal event", func(t *testing.T) {
		t.Parallel()
		rec, core := serve(t, Protocol{}, `{"model":"team/model","input":"Hi","stream":true}`,
			start(&corev1.Start{Model: "team/model", Created: 1761000000}), ev("Hel"),
			&corev1.GenerateEvent{Event: &corev1.GenerateEvent_Error{Error: &corev1.StreamError{Code: apierror.UpstreamTimeout, Message: "the upstream stream stalled"}}})
		if string(core.got.GetRawBody()) != `{"model":"team/model","input":"Hi","stream":true}` {
			t.Errorf("raw body not passed to core: %s", core.got.GetRawBody())
		}
		final := checkStream(t, sdkEvents(t, rec.Body.Bytes(), false))
		if final.Status != "failed" || string(final.Error.Code) != apierror.UpstreamTimeout || final.OutputText() != "Hel" {
			t.Errorf("final response %s", final.RawJSON())
		}
	})
	t.Run("a translated compaction is refused with the spec envelope", func(t *testing.T) {
		t.Parallel()
		rec, _ := serve(t, Protocol{Compact: true}, `{"model":"team/model","input":"long"}`,
			start(&corev1.Start{Model: "team/model"}), ev("x"))
		var env apierror.Envelope
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
			t.Fatalf("%v: %s", err, rec.Body)
		}
		if rec.Code != 400 || env.Error.Code != apierror.InvalidRequest || env.Error.RequestID != "req-7" {
			t.Errorf("status %d envelope %+v", rec.Code, env)
		}
	})
	t.Run("a passthrough compaction comes back verbatim", func(t *testing.T) {
		t.Parallel()
		answer := `{"id":"resp_9","object":"response.compaction","created_at":1764967971,"output":[{"id":"cmp_1","type":"compaction","encrypted_content":"gAAAA"}],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`
		rec, core := serve(t, Protocol{Compact: true}, `{"model":"team/model","input":"long"}`,
			start(&corev1.Start{Model: "team/model", Passthrough: true, Status: 200, ContentType: "application/json"}),
			ev(&corev1.Native{Data: []byte(answer)}), ev(&corev1.Usage{InputTokens: 1, OutputTokens: 1, Reliable: true}))
		if core.got.GetProtocol() != corev1.Protocol_PROTOCOL_RESPONSES_COMPACT || core.got.GetEndpointFamily() != "responses.compact" {
			t.Errorf("request %v %q", core.got.GetProtocol(), core.got.GetEndpointFamily())
		}
		if rec.Code != 200 || rec.Body.String() != answer {
			t.Errorf("status %d body %s", rec.Code, rec.Body)
		}
	})
}
