package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"modelgateway/core/metering"
	"modelgateway/core/rpc"
	"modelgateway/core/wire/apierror"
)

// syncBuffer is a log destination that tests read while the gateway writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTelemetry(t *testing.T, o Options) (*Telemetry, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	log, err := NewLogger(logs, "json", "info")
	if err != nil {
		t.Fatal(err)
	}
	o.Log = log
	tel, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Close(context.Background()) })
	return tel, logs
}

// outcome is a chat answer that fell back from a failing provider to a working one.
func outcome(start time.Time) rpc.Outcome {
	return rpc.Outcome{
		RequestID: "req-secret-id", KeyID: "key-id-1", KeyPrefix: "gw-abc123", ProfileID: "profile-id-1",
		Model: "gpt-x", EndpointFamily: "chat.completions", Provider: "second", Status: "ok",
		Usage:    metering.Usage{Input: 100, CachedInput: 20, Output: 11, Reliable: true},
		Cost:     decimal.NullDecimal{Decimal: decimal.RequireFromString("1.5"), Valid: true},
		Currency: "RUB", StartTime: start, FirstByteTime: start.Add(200 * time.Millisecond), EndTime: start.Add(1200 * time.Millisecond),
		Attempts: []rpc.Attempt{
			{Provider: "first", Kind: "anthropic", Start: start, End: start.Add(50 * time.Millisecond), Error: "503"},
			{Provider: "second", Kind: "openai", Start: start.Add(50 * time.Millisecond), End: start.Add(200 * time.Millisecond)},
		},
	}
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, body)
	}
	return string(body)
}

func TestMetricsFollowTheGenAIConventionsAndCarryNoIdentity(t *testing.T) {
	t.Parallel()
	tel, _ := newTelemetry(t, Options{MetricsAddr: "127.0.0.1:0", Gauges: Gauges{
		SnapshotLoadedAt: func() time.Time { return time.Now().Add(-3 * time.Second) },
		RealtimeSessions: func() int { return 2 },
	}})
	h := tel.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tel.Record(r.Context(), outcome(time.Now().Add(-2*time.Second)))
		w.Write([]byte("answer"))
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	refused := outcome(time.Now())
	refused.Status, refused.Attempts, refused.Cost, refused.Usage = apierror.InsufficientBalance, nil, decimal.NullDecimal{}, metering.Usage{}
	tel.Record(context.Background(), refused) // a gRPC call: counted from its outcome
	tel.Sync(context.Background())

	body := scrape(t, tel.MetricsAddr)
	for _, want := range []string{
		`gen_ai_server_request_duration_seconds_bucket{gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="gpt-x",le="1.28"} 1`,
		`gen_ai_server_time_to_first_token_seconds_bucket{gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="gpt-x",le="0.25"} 1`,
		// (1.2 s - 0.2 s) over 10 tokens after the first: 0.1 s per token.
		`gen_ai_server_time_per_output_token_seconds_sum{gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="gpt-x"} 0.1`,
		`gen_ai_client_token_usage_sum{gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="gpt-x",gen_ai_token_type="input"} 120`,
		`gen_ai_client_token_usage_sum{gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="gpt-x",gen_ai_token_type="output"} 11`,
		`gen_ai_server_request_duration_seconds_count{error_type="insufficient_balance",gen_ai_operation_name="chat",gen_ai_request_model="gpt-x"} 1`,
		`gateway_requests_total{code="ok",endpoint_family="chat.completions"} 1`,
		`gateway_requests_total{code="insufficient_balance",endpoint_family="chat.completions"} 1`,
		`gateway_balance_refusals_total{endpoint_family="chat.completions"} 1`,
		`gateway_upstream_attempts_total{outcome="error",provider="first"} 1`,
		`gateway_upstream_attempts_total{outcome="ok",provider="second"} 1`,
		`gateway_upstream_fallbacks_total{outcome="error",provider="first"} 1`,
		`gen_ai_client_operation_duration_seconds_count{error_type="503",gen_ai_operation_name="chat",gen_ai_provider_name="anthropic",gen_ai_request_model="gpt-x"} 1`,
		`gen_ai_client_operation_duration_seconds_bucket{gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="gpt-x",le="0.16"} 1`,
		`gateway_charged_total{currency="RUB"} 1.5`,
		"gateway_realtime_sessions 2\n",
		"gateway_snapshot_age_seconds 3.",
		"go_goroutines ",
		"process_cpu_seconds_total ",
		"# HELP gen_ai_server_request_duration_seconds",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// The recommended buckets of the conventions, not the SDK's defaults.
	if !strings.Contains(body, `gen_ai_client_token_usage_bucket{gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="gpt-x",gen_ai_token_type="input",le="6.7108864e+07"}`) {
		t.Error("token usage lacks the convention's 67108864 bucket")
	}
	for _, secret := range []string{"req-secret-id", "key-id-1", "profile-id-1", "gw-abc123"} {
		if strings.Contains(body, secret) {
			t.Errorf("/metrics carries %q", secret)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
}

func TestClientSpansNamedByOperationAndModelUnderTheServerSpan(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewInMemoryExporter()
	tel, logs := newTelemetry(t, Options{SpanExporter: spans, SpanSyncer: true, Sampler: sdktrace.AlwaysSample()})
	var server trace.SpanContext
	h := tel.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		server = trace.SpanContextFromContext(r.Context())
		w.Header().Set("X-Request-Id", "req-1")
		tel.Record(r.Context(), outcome(time.Now().Add(-2*time.Second)))
		w.Write([]byte("answer"))
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	tel.Sync(context.Background())

	var client []sdktrace.ReadOnlySpan
	var serverName string
	for _, s := range spans.GetSpans().Snapshots() {
		switch s.SpanKind() {
		case trace.SpanKindClient:
			client = append(client, s)
		case trace.SpanKindServer:
			serverName = s.Name()
			if s.SpanContext().SpanID() != server.SpanID() || s.SpanContext().TraceID() != server.TraceID() {
				t.Error("the server span does not carry the ids the request was given")
			}
		}
	}
	if serverName != "POST /v1/chat/completions" {
		t.Errorf("server span %q, want POST /v1/chat/completions", serverName)
	}
	if len(client) != 2 {
		t.Fatalf("%d client spans, want one per attempt (2)", len(client))
	}
	attrs := func(s sdktrace.ReadOnlySpan) map[string]string {
		m := map[string]string{}
		for _, kv := range s.Attributes() {
			m[string(kv.Key)] = kv.Value.Emit()
		}
		return m
	}
	failed, answered := attrs(client[0]), attrs(client[1])
	for i, s := range client {
		if s.Name() != "chat gpt-x" {
			t.Errorf("client span %d named %q, want \"chat gpt-x\"", i, s.Name())
		}
		if s.Parent().SpanID() != server.SpanID() || s.SpanContext().TraceID() != server.TraceID() {
			t.Errorf("client span %d is not a child of the server span", i)
		}
	}
	if failed["error.type"] != "503" || failed["gen_ai.provider.name"] != "anthropic" || failed["gen_ai.usage.output_tokens"] != "" {
		t.Errorf("failed attempt attributes %v", failed)
	}
	if answered["gen_ai.provider.name"] != "openai" || answered["gen_ai.usage.input_tokens"] != "120" ||
		answered["gen_ai.usage.output_tokens"] != "11" || answered["gen_ai.operation.name"] != "chat" || answered["error.type"] != "" {
		t.Errorf("answered attempt attributes %v", answered)
	}
	if got := client[1].EndTime().Sub(client[1].StartTime()); got != 1150*time.Millisecond {
		t.Errorf("answered attempt lasted %v, want the answer's whole 1.15 s", got)
	}

	// The access line carries the trace id.
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(logs.String())), &line); err != nil {
		t.Fatalf("access line %q: %v", logs.String(), err)
	}
	if line["trace_id"] != server.TraceID().String() {
		t.Errorf("access line trace_id %v, want %s", line["trace_id"], server.TraceID())
	}
}

func TestAccessLine(t *testing.T) {
	t.Parallel()
	tel, logs := newTelemetry(t, Options{})
	h := tel.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req-7")
		switch r.URL.Path {
		case "/v1/messages":
			apierror.Write(w, "req-7", apierror.New(apierror.InvalidKey, "no"))
			return
		case "/healthz":
			return
		}
		o := outcome(time.Now())
		o.EndTime = time.Now().Add(time.Second)
		tel.Record(r.Context(), o)
		time.Sleep(10 * time.Millisecond)
		w.Write([]byte("answer"))
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, p := range []string{"/v1/chat/completions?key=query-secret", "/v1/messages", "/healthz"} {
		resp, err := http.Post(srv.URL+p, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	tel.Sync(context.Background())
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d access lines, want 2 (health probes are not logged):\n%s", len(lines), logs.String())
	}
	var ok, refused map[string]any
	json.Unmarshal([]byte(lines[0]), &ok)
	json.Unmarshal([]byte(lines[1]), &refused)
	want := map[string]any{
		"msg": "request", "request_id": "req-7", "method": "POST", "path": "/v1/chat/completions", "family": "chat.completions",
		"status": 200.0, "code": "ok", "key_prefix": "gw-abc123", "model": "gpt-x", "upstream": "second", "attempts": 2.0,
		"input_tokens": 100.0, "cached_input_tokens": 20.0, "output_tokens": 11.0, "cost": "1.5", "currency": "RUB", "bytes": 6.0,
	}
	for k, v := range want {
		if ok[k] != v {
			t.Errorf("access line %s = %v, want %v", k, ok[k], v)
		}
	}
	if ttfb, _ := ok["ttfb_ms"].(float64); ttfb < 10 {
		t.Errorf("ttfb_ms = %v, want the time of the first write (>= 10 ms)", ok["ttfb_ms"])
	}
	if refused["code"] != apierror.InvalidKey || refused["status"] != 401.0 || refused["family"] != "messages" {
		t.Errorf("refusal line %v, want code invalid_key, status 401, family messages", refused)
	}
	if strings.Contains(logs.String(), "query-secret") {
		t.Error("the access log carries the query string")
	}
}

func TestFamilyOf(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{
		"/v1/chat/completions":                       "chat.completions",
		"/v1beta/models/gem/x:streamGenerateContent": "content.generate",
		"/v1beta/models/gem:countTokens":             "content.count_tokens",
		"/v1beta/models/gem:batchEmbedContents":      "content.embed",
		"/v1beta/models/gem:somethingElse":           "other",
		"/v1beta/models":                             "discovery",
		"/v1/models/org/x":                           "discovery",
		"/v1/models/gem:generateContent":             "content.generate",
		"/v1/models/gem:streamGenerateContent":       "content.generate",
		"/v1/models/ft:gpt-4o-mini:org:abc":          "discovery",
		"/admin/v1/profiles":                         "admin",
		"/readyz":                                    "health",
		"/client/chosen/path":                        "other",
	} {
		if got := FamilyOf(path); got != want {
			t.Errorf("FamilyOf(%q) = %q, want %q", path, got, want)
		}
	}
}

// Span names never carry a client-chosen model or path.
func TestRouteOf(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{
		"/v1/chat/completions":                 "/v1/chat/completions",
		"/v1beta/models/gem:generateContent":   "/v1beta/models/{model}:generateContent",
		"/v1/models/gem:streamGenerateContent": "/v1/models/{model}:streamGenerateContent",
		"/v1/models/ft:gpt-4o-mini:org:abc":    "/v1/models/{model}",
		"/v1/models/gpt-4o":                    "/v1/models/{model}",
		"/v1beta/models/gem":                   "/v1beta/models/{model}",
		"/admin/v1/profiles/p1":                "/admin/...",
		"/client/chosen/path":                  "other",
	} {
		if got := RouteOf(path); got != want {
			t.Errorf("RouteOf(%q) = %q, want %q", path, got, want)
		}
	}
}

// A stream chunk passes the response writer without an allocation or a lock.
func TestChunkWritesAllocateNothing(t *testing.T) {
	a := &access{}
	w := &responseWriter{ResponseWriter: discardWriter{}, a: a}
	chunk := []byte("data: {}\n\n")
	w.Write(chunk)
	if n := testing.AllocsPerRun(1000, func() { w.Write(chunk) }); n != 0 {
		t.Errorf("%v allocations per chunk, want 0", n)
	}
}

// A flush through the access writer reports the wrapped writer's flush error (the client
// has gone), as a stream's lazyflush.Writer needs to learn it at its flush; a flush that
// works reports none.
func TestFlushPassesTheFlushError(t *testing.T) {
	gone := errors.New("client gone")
	for _, want := range []error{nil, gone} {
		inner := &flushErrWriter{err: want}
		w := &responseWriter{ResponseWriter: inner, a: &access{}}
		if err := http.NewResponseController(w).Flush(); err != want || inner.flushes != 1 {
			t.Fatalf("flush: %v after %d flushes, want %v after 1", err, inner.flushes, want)
		}
	}
}

type flushErrWriter struct {
	discardWriter
	err     error
	flushes int
}

func (w *flushErrWriter) FlushError() error { w.flushes++; return w.err }

type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (discardWriter) WriteHeader(int)             {}

func TestLoggerLevels(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log, err := NewLogger(&buf, "text", "warn")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hidden")
	log.Warn("shown")
	if strings.Contains(buf.String(), "hidden") || !strings.Contains(buf.String(), "shown") {
		t.Errorf("warn level logged %q", buf.String())
	}
	if _, err := NewLogger(&buf, "json", "loud"); err == nil {
		t.Error("an unknown level was accepted")
	}
}

// By default one new trace in ten is kept; a sampled caller is always followed; the standard
// variables choose otherwise, and nonsense is refused.
func TestSampler(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	kept := func(s sdktrace.Sampler, parent trace.SpanContext) int {
		ctx := context.Background()
		if parent.IsValid() {
			ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
		}
		n := 0
		for i := 0; i < 10000; i++ {
			tid := randomTraceID()
			if parent.IsValid() {
				tid = parent.TraceID()
			}
			if s.ShouldSample(sdktrace.SamplingParameters{ParentContext: ctx, TraceID: tid}).Decision == sdktrace.RecordAndSample {
				n++
			}
		}
		return n
	}
	def, err := sampler(env())
	if err != nil {
		t.Fatal(err)
	}
	if n := kept(def, trace.SpanContext{}); n < 700 || n > 1300 {
		t.Errorf("default sampler kept %d of 10000 new traces, want about 1000", n)
	}
	sampledParent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: randomTraceID(), SpanID: randomSpanID(), TraceFlags: trace.FlagsSampled, Remote: true})
	if n := kept(def, sampledParent); n != 10000 {
		t.Errorf("default sampler kept %d of 10000 sampled callers' traces, want all", n)
	}
	all, err := sampler(env("OTEL_TRACES_SAMPLER", "parentbased_always_on"))
	if err != nil || kept(all, trace.SpanContext{}) != 10000 {
		t.Errorf("parentbased_always_on: %v", err)
	}
	if _, err := sampler(env("OTEL_TRACES_SAMPLER", "traceidratio", "OTEL_TRACES_SAMPLER_ARG", "2")); err == nil {
		t.Error("a ratio of 2 was accepted")
	}
	if _, err := sampler(env("OTEL_TRACES_SAMPLER", "jaeger_remote")); err == nil {
		t.Error("an unsupported sampler was accepted")
	}
}

// A request with several outcomes (a realtime session's responses) has one access line with
// their usage and cost summed, and each outcome measured once, as it came: the charged
// counter is what was charged, the token histograms the answers' own counts.
func TestEachOutcomeOfARequestIsMeasuredOnce(t *testing.T) {
	t.Parallel()
	var reader *sdkmetric.ManualReader
	tel, logs := newTelemetry(t, Options{Reader: func(p sdkmetric.Producer) sdkmetric.Reader {
		reader = sdkmetric.NewManualReader(sdkmetric.WithProducer(p))
		return reader
	}})
	start := time.Now().Add(-2 * time.Second)
	first, second := outcome(start), outcome(start)
	second.Cost.Decimal = decimal.RequireFromString("2.5")
	second.Usage = metering.Usage{Input: 7, Output: 3, Reliable: true}
	second.Attempts = second.Attempts[1:]
	h := tel.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tel.Record(r.Context(), first)
		tel.Record(r.Context(), second)
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/v1/realtime", nil))
	tel.Sync(context.Background())

	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(l, `"msg":"request"`) {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	if line["cost"] != "4" || line["input_tokens"] != float64(107) || line["output_tokens"] != float64(14) {
		t.Errorf("access line cost %v, input %v, output %v: want the sums 4, 107, 14", line["cost"], line["input_tokens"], line["output_tokens"])
	}
	if got := counterSum(t, reader, "gateway.charged"); got != 4 {
		t.Errorf("gateway.charged = %v, want 4 (1.5 + 2.5)", got)
	}
	if got := counterSum(t, reader, "gateway.upstream.attempts"); got != 3 {
		t.Errorf("gateway.upstream.attempts = %v, want 3 (2 + 1)", got)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var tokens, count int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[int64]); ok && m.Name == "gen_ai.client.token.usage" {
				for _, p := range h.DataPoints {
					tokens, count = tokens+p.Sum, count+int64(p.Count)
				}
			}
		}
	}
	if tokens != 120+11+7+3 || count != 4 { // input with the cached input (TotalInput)
		t.Errorf("gen_ai.client.token.usage: %d tokens in %d points, want 141 in 4", tokens, count)
	}
}
