package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/keys"
	"modelgateway/core/simulator"
	"modelgateway/core/store/storetest"
	"modelgateway/core/telemetry"
)

// A full run through every text protocol, a fallback, a refusal and a key in the query: the
// access log has one line per request with what an operator needs, and neither the logs
// (debug level), nor /metrics, nor the spans carry any secret, prompt or answer.
func TestObservabilityCarriesNoSecrets(t *testing.T) {
	t.Parallel()
	logs := &gatewaytest.SyncBuffer{}
	log, err := telemetry.NewLogger(logs, "json", "debug")
	if err != nil {
		t.Fatal(err)
	}
	up := gatewaytest.StartUpstream(t, simulator.Options{Words: 7})
	spans := tracetest.NewInMemoryExporter()
	cfg := &Config{DatabaseURL: storetest.DatabaseURL(t), HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0",
		AdminToken: adminToken, DrainTimeout: 5 * time.Second, MetricsAddr: "127.0.0.1:0",
		Env: func(name string) string {
			if name == "UP_KEY" {
				return upstreamKey
			}
			return ""
		},
		Telemetry: func(o *telemetry.Options) {
			o.SpanExporter, o.SpanSyncer, o.Sampler = spans, true, sdktrace.AlwaysSample()
		},
	}
	g, err := Start(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	shut := sync.OnceFunc(func() {
		http.DefaultClient.CloseIdleConnections()
		if err := g.Shutdown(5 * time.Second); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	t.Cleanup(shut)
	ge := &genEnv{env: &env{t: t, g: g, base: "http://" + g.HTTPAddr}, upURL: up.URL}
	doc := gatewaytest.GenCatalog(up.URL)
	ge.admin("POST", "/admin/v1/catalog:apply", doc)
	ge.key, _ = ge.newProfile(t, "obs", "1000")
	poorKey, _ := ge.newProfile(t, "obs-poor", "0")

	prompt := "prompt-" + uuid.NewString()
	secrets := map[string]string{"client key": ge.key, "poor key": poorKey, "admin token": adminToken, "provider key": upstreamKey, "prompt": prompt}
	anth := map[string]string{"anthropic-version": "2023-06-01"}
	type call struct {
		name, path string
		headers    map[string]string
		body       string
		status     int
	}
	calls := []call{
		{"chat", "/v1/chat/completions", nil, `{"model":"m-openai","messages":[{"role":"user","content":"` + prompt + `"}]}`, 200},
		{"chat stream translated", "/v1/chat/completions", nil, `{"model":"m-anthropic","stream":true,"messages":[{"role":"user","content":"` + prompt + `"}]}`, 200},
		{"messages", "/v1/messages", anth, `{"model":"m-gemini","max_tokens":50,"messages":[{"role":"user","content":"` + prompt + `"}]}`, 200},
		{"responses", "/v1/responses", nil, `{"model":"m-openai","input":"` + prompt + `"}`, 200},
		{"content with the key in the query", "/v1beta/models/m-gemini:generateContent?key=" + ge.key, map[string]string{"Authorization": ""},
			`{"contents":[{"parts":[{"text":"` + prompt + `"}]}]}`, 200},
		{"fallback", "/v1/chat/completions", nil, `{"model":"m-fallback","messages":[{"role":"user","content":"` + prompt + `"}]}`, 200},
		{"no balance", "/v1/chat/completions", map[string]string{"Authorization": "Bearer " + poorKey}, `{"model":"m-openai","messages":[{"role":"user","content":"` + prompt + `"}]}`, 402},
		{"unknown key", "/v1/chat/completions", map[string]string{"Authorization": "Bearer gw-unknown-" + prompt}, `{"model":"m-openai","messages":[]}`, 401},
	}
	ids := map[string]string{}
	for _, c := range calls {
		status, h, body := ge.post(t, c.path, c.headers, c.body)
		if status != c.status {
			t.Fatalf("%s: %d %s", c.name, status, body)
		}
		ids[c.name] = h.Get("X-Request-Id")
		if status == 200 {
			secrets["answer of "+c.name] = answerText(t, body)
		}
	}
	// The gRPC listener: a refused call and an answered one.
	conn, err := grpc.NewClient(g.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	core := corev1.NewCoreServiceClient(conn)
	for id, key := range map[string]string{"grpc-refused": "gw-unknown-" + prompt, "grpc-ok": ge.key} {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+key, "x-request-id", id)
		_, err := core.ListModels(ctx, &corev1.ListModelsRequest{})
		if (err == nil) != (id == "grpc-ok") {
			t.Fatalf("%s: %v", id, err)
		}
	}
	scrapeUntil(t, g.MetricsAddr, `gateway_requests_total{code="invalid_key",endpoint_family="other"} 1`)
	scrapeUntil(t, g.MetricsAddr, `gateway_requests_total{code="invalid_key",endpoint_family="chat.completions"} 1`)
	// Settlement runs every 500 ms.
	metrics := scrapeUntil(t, g.MetricsAddr, "gateway_settlement_batch_size_count")
	// The queue is handled in order, so every earlier record is in; the in-memory exporter
	// forgets its spans at shutdown.
	recorded := spans.GetSpans()
	shut()

	lines := map[string]map[string]any{}
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("log line is not JSON: %q", sc.Text())
		}
		if l["msg"] == "request" {
			if _, dup := lines[l["request_id"].(string)]; dup {
				t.Errorf("two access lines for %s", l["request_id"])
			}
			lines[l["request_id"].(string)] = l
		}
	}
	chat := lines[ids["chat"]]
	if chat == nil {
		t.Fatalf("no access line for the chat request:\n%s", logs.String())
	}
	for k, want := range map[string]any{"family": "chat.completions", "model": "m-openai", "status": 200.0, "code": "ok",
		"upstream": "up-openai", "attempts": 1.0, "key_prefix": ge.key[:keys.PrefixLen], "currency": "RUB", "usage_reliable": true} {
		if chat[k] != want {
			t.Errorf("chat access line %s = %v, want %v", k, chat[k], want)
		}
	}
	for _, k := range []string{"input_tokens", "output_tokens", "latency_ms", "ttfb_ms", "cost", "trace_id"} {
		if v, ok := chat[k]; !ok || v == 0.0 || v == "" {
			t.Errorf("chat access line lacks %s: %v", k, chat)
		}
	}
	if l := lines[ids["fallback"]]; l == nil || l["attempts"] != 2.0 || l["upstream"] != "up-openai" {
		t.Errorf("fallback access line %v, want 2 attempts ending at up-openai", l)
	}
	if l := lines[ids["no balance"]]; l == nil || l["code"] != "insufficient_balance" || l["status"] != 402.0 {
		t.Errorf("refusal access line %v", l)
	}
	if l := lines[ids["unknown key"]]; l == nil || l["code"] != "invalid_key" || l["key_prefix"] != nil {
		t.Errorf("unknown key access line %v, want code invalid_key and no prefix", l)
	}
	if l := lines["grpc-refused"]; l == nil || l["code"] != "invalid_key" || l["path"] != "/gateway.core.v1.CoreService/ListModels" {
		t.Errorf("refused gRPC call's access line %v", l)
	}
	if l := lines["grpc-ok"]; l == nil || l["code"] != "ok" {
		t.Errorf("gRPC call's access line %v", l)
	}
	for _, want := range []string{
		`gateway_requests_total{code="ok",endpoint_family="chat.completions"} 3`,
		`gateway_requests_total{code="ok",endpoint_family="content.generate"} 1`,
		`gateway_requests_total{code="insufficient_balance",endpoint_family="chat.completions"} 1`,
		`gateway_upstream_fallbacks_total{outcome="error",provider="dead"} 1`,
		`gateway_balance_refusals_total{endpoint_family="chat.completions"} 1`,
		`gen_ai_client_token_usage_count{gen_ai_operation_name="generate_content",gen_ai_provider_name="gcp.gemini",gen_ai_request_model="m-gemini",gen_ai_token_type="output"} 1`,
		`gateway_charged_total{currency="RUB"}`,
		"gateway_db_pool_connections{state=\"max\"}",
		"gateway_snapshot_age_seconds ",
		"gateway_charge_wait_seconds_count ", // exported once a charge has waited
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// Every series the shipped alert rules use exists.
	rules, err := os.ReadFile("deploy/prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range regexp.MustCompile(`\b(?:gateway|gen_ai)_[a-z_]+`).FindAllString(string(rules), -1) {
		if !strings.Contains(metrics, "\n"+name) && !strings.Contains(metrics, name+"=") {
			t.Errorf("the alert rules use %s, which /metrics does not have", name)
		}
	}
	var spanText strings.Builder
	clientSpans := 0
	for _, s := range recorded {
		spanText.WriteString(s.Name)
		for _, a := range s.Attributes {
			spanText.WriteString(" " + string(a.Key) + "=" + a.Value.Emit())
		}
		if strings.HasPrefix(s.Name, "chat ") || strings.HasPrefix(s.Name, "generate_content ") {
			clientSpans++
		}
	}
	if clientSpans < 6 {
		t.Errorf("%d client spans, want one per upstream attempt (at least 6)", clientSpans)
	}
	for what, secret := range secrets {
		for where, text := range map[string]string{"logs": logs.String(), "/metrics": metrics, "spans": spanText.String()} {
			if strings.Contains(text, secret) {
				t.Errorf("the %s carry the %s", where, what)
			}
		}
	}
}

// answerText is the generated text of a non-streamed answer or the concatenated deltas of a
// stream; the simulator's answers are long enough to be unique in the logs.
func answerText(t *testing.T, body []byte) string {
	t.Helper()
	var parts []string
	collect := func(v any) {
		var walk func(any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				for k, x := range v {
					if s, ok := x.(string); ok && (k == "content" || k == "text" || k == "delta") {
						parts = append(parts, s)
					}
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			}
		}
		walk(v)
	}
	var whole any
	if json.Unmarshal(body, &whole) == nil {
		collect(whole)
	} else {
		for _, line := range strings.Split(string(body), "\n") {
			var ev any
			if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev) == nil {
				collect(ev)
			}
		}
		// A stream's deltas are single words: the whole answer is their concatenation.
		parts = []string{strings.Join(parts, "")}
	}
	if len(parts) == 0 || len(parts[0]) < 16 {
		t.Fatalf("no answer text in %s", body)
	}
	return parts[0]
}

// scrapeUntil reads /metrics until it contains want (gatewaytest.ScrapeUntil).
func scrapeUntil(t *testing.T, addr, want string) string {
	t.Helper()
	return gatewaytest.ScrapeUntil(t, addr, want)
}
