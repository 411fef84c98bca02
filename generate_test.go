package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/rpc"
	"modelgateway/core/simulator"
	"modelgateway/core/store/storetest"
)

// The generation tests run the real gateway against the upstream simulator (which speaks the
// three upstream wire protocols) behind a recorder, and drive it with the official SDKs.

const upstreamKey = gatewaytest.UpstreamKey

// upstreamCall is one request the fake upstream received.
type upstreamCall = gatewaytest.Call

// meterRec keeps every outcome core reported.
type meterRec struct {
	mu  sync.Mutex
	out map[string]rpc.Outcome
	ch  chan rpc.Outcome
}

func (m *meterRec) Record(_ context.Context, o rpc.Outcome) {
	m.mu.Lock()
	m.out[o.RequestID] = o
	m.mu.Unlock()
	select {
	case m.ch <- o:
	default:
	}
}

// wait returns the outcome of a request id, waiting for the generation to finish.
func (m *meterRec) wait(t testing.TB, id string) rpc.Outcome {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		m.mu.Lock()
		o, ok := m.out[id]
		m.mu.Unlock()
		if ok {
			return o
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no outcome recorded for request %s", id)
	return rpc.Outcome{}
}

type genEnv struct {
	*env
	key       string
	up        *gatewaytest.Upstream
	meter     *meterRec
	upURL     string
	profileID string
}

func startGen(t *testing.T) *genEnv {
	t.Helper()
	g := startGenOn(t, storetest.DatabaseURL(t), true)
	g.key, g.profileID = g.newProfile(t, "gen", "1000")
	return g
}

// startGenOn starts a gateway instance on a database; the first instance of a database
// applies the catalogue.
func startGenOn(t *testing.T, dbURL string, applyCatalog bool) *genEnv {
	t.Helper()
	rec := gatewaytest.StartUpstream(t, simulator.Options{})
	meter := &meterRec{out: map[string]rpc.Outcome{}, ch: make(chan rpc.Outcome, 1)}
	e := startGateway(t, dbURL, adminToken, func(c *Config) {
		c.Observer = meter
		c.Env = func(name string) string {
			if name == "UP_KEY" {
				return upstreamKey
			}
			return ""
		}
	})
	if applyCatalog {
		e.admin("POST", "/admin/v1/catalog:apply", gatewaytest.GenCatalog(rec.URL))
	}
	return &genEnv{env: e, up: rec, meter: meter, upURL: rec.URL}
}

// newProfile makes a profile with a credit and a key that may use everything.
func (g *genEnv) newProfile(t testing.TB, ref, credit string) (key, profileID string) {
	t.Helper()
	p := g.admin("POST", "/admin/v1/profiles", `{"display_name":"P","external_ref":"`+ref+`"}`)
	pid := p["id"].(string)
	if credit != "0" {
		g.admin("POST", "/admin/v1/profiles/"+pid+":credit", `{"amount":"`+credit+`","reason":"topup","idempotency_key":"c1"}`)
	}
	k := g.admin("POST", "/admin/v1/profiles/"+pid+"/keys", `{"name":"all","allowed_endpoints":["*"],"allowed_models":["*"]}`)
	return k["secret"].(string), pid
}

// post sends a raw JSON request with the key and returns status, headers and body.
func (g *genEnv) post(t testing.TB, path string, headers map[string]string, body string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", g.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+g.key)
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: reading: %v", path, err)
	}
	return resp.StatusCode, resp.Header, raw
}

// envelope decodes the spec error envelope.
func envelope(t testing.TB, raw []byte) (code, message, requestID string) {
	t.Helper()
	return gatewaytest.Envelope(t, raw)
}

// The request checks of spec 4.2, 4.5 and 8 answer with the spec code and the request id, and
// send nothing upstream.
func TestGenerationRequestChecks(t *testing.T) {
	g := startGen(t)
	anth := map[string]string{"anthropic-version": "2023-06-01"}
	big := `{"model":"m-openai","messages":[{"role":"user","content":"` + strings.Repeat("a", 32<<20) + `"}]}`
	cases := []struct {
		name, path string
		headers    map[string]string
		body       string
		status     int
		code       string
	}{
		{"output limit above the model's", "/v1/chat/completions", nil,
			`{"model":"m-limited","max_completion_tokens":101,"messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error"},
		{"legacy max_tokens above the model's", "/v1/chat/completions", nil,
			`{"model":"m-limited","max_tokens":101,"messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error"},
		{"max_output_tokens above the model's", "/v1/responses", nil,
			`{"model":"m-limited","max_output_tokens":101,"input":"hi"}`, 400, "invalid_request_error"},
		{"maxOutputTokens above the model's", "/v1beta/models/m-limited:generateContent", nil,
			`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":101}}`, 400, "invalid_request_error"},
		{"messages max_tokens above the model's", "/v1/messages", anth,
			`{"model":"m-limited","max_tokens":101,"messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error"},
		{"messages without max_tokens", "/v1/messages", anth,
			`{"model":"m-openai","messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error"},
		{"messages with zero max_tokens", "/v1/messages", anth,
			`{"model":"m-openai","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error"},
		{"messages without a version header", "/v1/messages", nil,
			`{"model":"m-openai","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error"},
		{"stream on a model that cannot", "/v1/chat/completions", nil,
			`{"model":"m-nostream","stream":true,"messages":[{"role":"user","content":"hi"}]}`, 400, "streaming_not_supported"},
		{"stream on legacy completions", "/v1/completions", nil,
			`{"model":"m-openai","stream":true,"prompt":"hi"}`, 400, "streaming_not_supported"},
		{"batch prompt on legacy completions", "/v1/completions", nil,
			`{"model":"m-openai","prompt":["a","b"]}`, 400, "unsupported_prompt_shape"},
		{"token prompt on legacy completions", "/v1/completions", nil,
			`{"model":"m-openai","prompt":[1,2,3]}`, 400, "unsupported_prompt_shape"},
		{"unverified optional parameter", "/v1/chat/completions", nil,
			`{"model":"m-capable","top_p":0.5,"messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error"},
		{"body model differs from the path model", "/v1beta/models/m-gemini:generateContent", nil,
			`{"model":"models/m-openai","contents":[{"parts":[{"text":"hi"}]}]}`, 400, "invalid_request_error"},
		{"not JSON", "/v1/chat/completions", nil, `{"model":`, 400, "invalid_request_error"},
		{"unknown model", "/v1/chat/completions", nil,
			`{"model":"nope","messages":[{"role":"user","content":"hi"}]}`, 404, "model_not_found"},
		{"body over 32 MiB", "/v1/chat/completions", nil, big, 413, "payload_too_large"},
		{"compaction on a non-OpenAI upstream", "/v1/responses/compact", nil,
			`{"model":"m-anthropic","input":"hi"}`, 400, "invalid_request_error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(g.up.Calls())
			id := "chk-" + strings.ReplaceAll(tc.name, " ", "-")
			h := map[string]string{"X-Request-Id": id}
			for k, v := range tc.headers {
				h[k] = v
			}
			status, hdr, raw := g.post(t, tc.path, h, tc.body)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, raw)
			}
			code, msg, rid := envelope(t, raw)
			if code != tc.code || rid != id || hdr.Get("X-Request-Id") != id {
				t.Fatalf("code %q (want %q), request id %q/%q (want %q): %s", code, tc.code, rid, hdr.Get("X-Request-Id"), id, msg)
			}
			if n := len(g.up.Calls()); n != before {
				t.Fatalf("the upstream was called %d times for a rejected request", n-before)
			}
		})
	}
	t.Run("unverified parameter is named", func(t *testing.T) {
		_, _, raw := g.post(t, "/v1/chat/completions", nil, `{"model":"m-capable","top_p":0.5,"messages":[{"role":"user","content":"hi"}]}`)
		if _, msg, _ := envelope(t, raw); !strings.Contains(msg, "top_p") {
			t.Fatalf("message does not name the parameter: %s", msg)
		}
	})
	t.Run("verified parameters and the limit itself pass", func(t *testing.T) {
		status, _, raw := g.post(t, "/v1/chat/completions", nil, `{"model":"m-capable","temperature":0.5,"max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`)
		if status != 200 {
			t.Fatalf("%d %s", status, raw)
		}
		status, _, raw = g.post(t, "/v1/chat/completions", nil, `{"model":"m-limited","max_completion_tokens":100,"messages":[{"role":"user","content":"hi"}]}`)
		if status != 200 {
			t.Fatalf("%d %s", status, raw)
		}
	})
	t.Run("a bad key wins over a bad body", func(t *testing.T) {
		status, _, raw := g.post(t, "/v1/chat/completions", map[string]string{"Authorization": "Bearer nope"}, `{"model":`)
		if code, _, _ := envelope(t, raw); status != 401 || code != "invalid_key" {
			t.Fatalf("%d %s", status, raw)
		}
	})
	t.Run("messages routes add the top-level type beside the spec envelope", func(t *testing.T) {
		bad := `{"model":"m-openai","messages":[{"role":"user","content":"hi"}]}`
		for _, tc := range []struct {
			path    string
			headers map[string]string
			typed   bool
		}{
			{"/v1/messages", anth, true},
			{"/v1/messages/count_tokens", map[string]string{"anthropic-version": "x"}, true},
			{"/v1/messages", map[string]string{"Authorization": "Bearer nope", "anthropic-version": "2023-06-01"}, true},
			{"/v1/chat/completions", map[string]string{"Authorization": "Bearer nope"}, false},
		} {
			_, _, raw := g.post(t, tc.path, tc.headers, bad)
			var top struct {
				Type *string `json:"type"`
			}
			if err := json.Unmarshal(raw, &top); err != nil {
				t.Fatal(err)
			}
			envelope(t, raw) // the spec's fields stay as they are
			switch {
			case tc.typed && (top.Type == nil || *top.Type != "error"):
				t.Errorf("%s: no top-level \"type\":\"error\": %s", tc.path, raw)
			case !tc.typed && top.Type != nil:
				t.Errorf("%s: a top-level type outside the messages routes: %s", tc.path, raw)
			}
		}
	})
	t.Run("every date-shaped version is accepted; other values are named with their header", func(t *testing.T) {
		body := `{"model":"m-anthropic","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
		status, _, raw := g.post(t, "/v1/messages", map[string]string{"anthropic-version": "2026-10-21"}, body)
		if status != 200 {
			t.Fatalf("2026-10-21: %d %s", status, raw)
		}
		if v := g.up.Last(t).Header.Get("anthropic-version"); v != "2023-06-01" {
			t.Errorf("the upstream got anthropic-version %q, want the adapter's 2023-06-01", v)
		}
		status, _, raw = g.post(t, "/v1/messages", map[string]string{"anthropic-version": "latest"}, body)
		if _, msg, _ := envelope(t, raw); status != 400 || !strings.Contains(msg, "anthropic-version") || strings.Contains(msg, "messages-version \"") {
			t.Fatalf("%d %s", status, raw)
		}
	})
	t.Run("both version header spellings", func(t *testing.T) {
		for _, h := range []string{"messages-version", "anthropic-version"} {
			status, _, raw := g.post(t, "/v1/messages", map[string]string{h: "2023-06-01"}, `{"model":"m-anthropic","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
			if status != 200 {
				t.Fatalf("%s: %d %s", h, status, raw)
			}
		}
	})
}

// Passthrough keeps fields the gateway does not know, rewrites only the model, and sends the
// provider credential from the environment instead of anything the client sent (spec 1, 2.3).
func TestPassthroughKeepsUnknownFieldsAndNoClientSecrets(t *testing.T) {
	g := startGen(t)
	status, _, raw := g.post(t, "/v1/chat/completions", map[string]string{"User-Agent": "client-agent/9", "X-Api-Key": g.key},
		`{"model":"m-openai","messages":[{"role":"user","content":"hi"}],"some_future_field":{"x":[1,2]}}`)
	if status != 200 {
		t.Fatalf("%d %s", status, raw)
	}
	call := g.up.Last(t)
	var body map[string]any
	if err := json.Unmarshal(call.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body["model"] != "up-gpt" {
		t.Errorf("upstream model %v, want up-gpt", body["model"])
	}
	if _, ok := body["some_future_field"]; !ok {
		t.Errorf("unknown field dropped: %s", call.Body)
	}
	if got := call.Header.Get("Authorization"); got != "Bearer "+upstreamKey {
		t.Errorf("upstream Authorization %q", got)
	}
	for name, vals := range call.Header {
		for _, v := range vals {
			if strings.Contains(v, g.key) || strings.Contains(v, "client-agent") {
				t.Errorf("client header reached the upstream: %s: %s", name, v)
			}
		}
	}
	if !strings.Contains(string(raw), `"model":"m-openai"`) {
		t.Errorf("the client does not see its model id: %s", raw)
	}
}

// A route whose first upstream is unreachable falls back to the next one before anything has
// been sent to the client.
func TestFallbackToTheNextRoute(t *testing.T) {
	g := startGen(t)
	for _, stream := range []string{"false", "true"} {
		status, _, raw := g.post(t, "/v1/chat/completions", nil, `{"model":"m-fallback","stream":`+stream+`,"messages":[{"role":"user","content":"hi"}]}`)
		if status != 200 || !strings.Contains(string(raw), "Simulated") {
			t.Fatalf("stream=%s: %d %s", stream, status, raw)
		}
	}
}

// First-byte and idle timeouts: before the first byte the client gets upstream_timeout; after
// it, the stream ends with the protocol's error event and the usage is unreliable. The provider
// "slow" has 2 s timeouts: the failing pauses are 30 s and the normal one 250 ms, so load on the
// machine cannot move either across the bound; that the timeout is not early is asserted apart.
func TestUpstreamTimeouts(t *testing.T) {
	g := startGen(t)
	start := time.Now()
	status, _, raw := g.post(t, "/v1/chat/completions", map[string]string{"X-Request-Id": "slow-1"}, `{"model":"m-slow","messages":[{"role":"user","content":"wait #sim:delay=30s"}]}`)
	if code, _, _ := envelope(t, raw); status != 504 || code != "upstream_timeout" {
		t.Fatalf("first byte: %d %s", status, raw)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("first-byte timeout after %s, before the provider's 2 s", took)
	}
	start = time.Now()
	status, _, raw = g.post(t, "/v1/chat/completions", map[string]string{"X-Request-Id": "slow-2"}, `{"model":"m-slow","stream":true,"messages":[{"role":"user","content":"pause #sim:stall=30s"}]}`)
	if status != 200 || !strings.Contains(string(raw), `"error"`) || strings.Contains(string(raw), "[DONE]") {
		t.Fatalf("idle: %d %s", status, raw)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("idle timeout after %s, before the provider's 2 s", took)
	}
	if o := g.meter.wait(t, "slow-2"); o.Usage.Reliable {
		t.Fatalf("a stalled stream was metered as reliable: %+v", o)
	}
	// A pause shorter than the idle timeout is normal (spec 6.2).
	status, _, raw = g.post(t, "/v1/chat/completions", map[string]string{"X-Request-Id": "slow-3"}, `{"model":"m-slow","stream":true,"messages":[{"role":"user","content":"pause #sim:stall=250ms"}]}`)
	if status != 200 || !strings.Contains(string(raw), "[DONE]") {
		t.Fatalf("short pause: %d %s", status, raw)
	}
	if o := g.meter.wait(t, "slow-3"); !o.Usage.Reliable {
		t.Fatalf("short pause metered as unreliable: %+v", o)
	}
}

// A stream cut by the upstream before its terminal event ends with the client protocol's error
// event and unreliable usage, in every client protocol.
func TestCutStreamIsUnreliable(t *testing.T) {
	g := startGen(t)
	for _, up := range upstreamKinds {
		id := "cut-" + up.kind
		status, _, raw := g.post(t, "/v1/chat/completions", map[string]string{"X-Request-Id": id},
			`{"model":"`+up.model+`","stream":true,"messages":[{"role":"user","content":"go #sim:cut"}]}`)
		if status != 200 || strings.Contains(string(raw), "[DONE]") || !strings.Contains(string(raw), `"error"`) {
			t.Fatalf("%s: %d %s", up.kind, status, raw)
		}
		if o := g.meter.wait(t, id); o.Usage.Reliable || o.Status != "upstream_error" {
			t.Fatalf("%s: cut stream metered %+v", up.kind, o)
		}
	}
}

// Token counting asks the upstream when its protocol can count and counts locally otherwise;
// both routes answer in their own shape (spec 2.5).
func TestCountTokens(t *testing.T) {
	g := startGen(t)
	anth := map[string]string{"anthropic-version": "2023-06-01"}
	long := strings.Repeat("count these words please ", 20)
	cases := []struct {
		name, path string
		headers    map[string]string
		body       string
		field      string
		upstream   string // path prefix the upstream must have seen, "" = counted locally
	}{
		{"messages on a messages upstream", "/v1/messages/count_tokens", anth,
			`{"model":"m-anthropic","messages":[{"role":"user","content":"` + long + `"}]}`, "input_tokens", "/v1/messages/count_tokens"},
		{"messages on a chat upstream", "/v1/messages/count_tokens", anth,
			`{"model":"m-openai","messages":[{"role":"user","content":"` + long + `"}]}`, "input_tokens", ""},
		{"content on a content upstream", "/v1beta/models/m-gemini:countTokens", nil,
			`{"contents":[{"parts":[{"text":"` + long + `"}]}]}`, "totalTokens", "/v1beta/models/up-gemini:countTokens"},
		{"content on a messages upstream", "/v1beta/models/m-anthropic:countTokens", nil,
			`{"contents":[{"parts":[{"text":"` + long + `"}]}]}`, "totalTokens", "/v1/messages/count_tokens"},
		{"content on a chat upstream", "/v1beta/models/m-openai:countTokens", nil,
			`{"contents":[{"parts":[{"text":"` + long + `"}]}]}`, "totalTokens", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(g.up.Calls())
			status, _, raw := g.post(t, tc.path, tc.headers, tc.body)
			if status != 200 {
				t.Fatalf("%d %s", status, raw)
			}
			var got map[string]int64
			if err := json.Unmarshal(raw, &got); err != nil || len(got) != 1 || got[tc.field] < 50 {
				t.Fatalf("count body %s", raw)
			}
			calls := g.up.Calls()[before:]
			switch {
			case tc.upstream == "" && len(calls) != 0:
				t.Fatalf("counted upstream at %s, want a local count", calls[0].Path)
			case tc.upstream != "" && (len(calls) != 1 || !strings.HasPrefix(calls[0].Path, tc.upstream)):
				t.Fatalf("upstream calls %v, want one to %s", calls, tc.upstream)
			}
		})
	}
}

// Compaction passes through to an OpenAI upstream; the JSON-array form of
// streamGenerateContent is one well-formed array.
func TestCompactAndJSONArrayStream(t *testing.T) {
	g := startGen(t)
	status, _, raw := g.post(t, "/v1/responses/compact", nil, `{"model":"m-openai","input":"a long conversation"}`)
	if status != 200 || !strings.Contains(string(raw), `"object":"response.compaction"`) || g.up.Last(t).Path != "/v1/responses/compact" {
		t.Fatalf("compact: %d %s", status, raw)
	}
	for _, model := range []string{"m-gemini", "m-anthropic"} {
		status, hdr, raw := g.post(t, "/v1beta/models/"+model+":streamGenerateContent", nil, `{"contents":[{"parts":[{"text":"hi"}]}]}`)
		var chunks []map[string]any
		if status != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") || json.Unmarshal(raw, &chunks) != nil || len(chunks) < 2 {
			t.Fatalf("%s: %d %s %s", model, status, hdr.Get("Content-Type"), raw)
		}
	}
}

const mediaCatalog = gatewaytest.MediaCatalog

func startMedia(t *testing.T) *genEnv {
	t.Helper()
	g := startGenOn(t, storetest.DatabaseURL(t), false)
	g.admin("POST", "/admin/v1/catalog:apply", strings.ReplaceAll(mediaCatalog, "{{UP}}", g.upURL))
	g.key, g.profileID = g.newProfile(t, "media", "1000")
	return g
}
