package rpc_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"modelgateway/core/gatewaytest"
)

// Answers of a key with a request rate carry the x-ratelimit-*-requests headers on every front
// (core sends them as gRPC header metadata; streams, held answers and unary calls copy them),
// refusals too, with retry-after; the refusals are counted in gateway_requests_total by code,
// and no metric label names the key.
func TestRateLimitHeadersOnEveryFront(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartGen(t, gatewaytest.Options{Env: []string{"GATEWAY_METRICS_ADDR=127.0.0.1:0"}})
	k := g.Admin("POST", "/admin/v1/profiles/"+g.ProfileID+"/keys", `{"name":"rl","allowed_endpoints":["*"],"allowed_models":["*"],"max_requests_per_second":40}`)
	key := k["secret"].(string)
	kid := k["key"].(map[string]any)["id"].(string)
	auth := map[string]string{"Authorization": "Bearer " + key, "anthropic-version": "2023-06-01"}
	const chat = `{"model":"m-openai","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	fronts := []struct{ name, path, body string }{
		{"chat", "/v1/chat/completions", chat},
		{"chat stream", "/v1/chat/completions", `{"model":"m-openai","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`},
		{"responses", "/v1/responses", `{"model":"m-openai","input":"hi","max_output_tokens":5}`},
		{"messages", "/v1/messages", `{"model":"m-anthropic","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`},
		{"messages count (unary)", "/v1/messages/count_tokens", `{"model":"m-anthropic","messages":[{"role":"user","content":"hi"}]}`},
		{"gemini", "/v1beta/models/m-gemini:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":5}}`},
		{"gemini stream", "/v1beta/models/m-gemini:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":5}}`},
	}
	for _, f := range fronts {
		status, hdr, raw := g.Post(f.path, auth, f.body)
		if status != 200 {
			t.Fatalf("%s: %d %s", f.name, status, raw)
		}
		if got := hdr.Get("X-Ratelimit-Limit-Requests"); got != "40" {
			t.Errorf("%s: x-ratelimit-limit-requests %q", f.name, got)
		}
		if n, err := strconv.Atoi(hdr.Get("X-Ratelimit-Remaining-Requests")); err != nil || n < 0 || n >= 40 {
			t.Errorf("%s: x-ratelimit-remaining-requests %q", f.name, hdr.Get("X-Ratelimit-Remaining-Requests"))
		}
		if d, err := time.ParseDuration(hdr.Get("X-Ratelimit-Reset-Requests")); err != nil || d <= 0 || d > time.Second {
			t.Errorf("%s: x-ratelimit-reset-requests %q", f.name, hdr.Get("X-Ratelimit-Reset-Requests"))
		}
		if hdr.Get("X-Ratelimit-Limit-Tokens") != "" {
			t.Errorf("%s: token headers on a key without a token limit", f.name)
		}
	}
	// A burst past the limit: refused with retry-after and the headers, remaining 0.
	refused := 0
	for i := 0; i < 200 && refused < 3; i++ {
		status, hdr, raw := g.Post("/v1/chat/completions", auth, chat)
		if status != 429 {
			continue
		}
		refused++
		if code, _, _ := gatewaytest.Envelope(t, raw); code != "rate_limited" || hdr.Get("Retry-After") == "" ||
			hdr.Get("X-Ratelimit-Limit-Requests") != "40" || hdr.Get("X-Ratelimit-Remaining-Requests") != "0" ||
			hdr.Get("X-Ratelimit-Reset-Requests") == "" {
			t.Errorf("refusal %d %s, headers %v", status, raw, hdr)
		}
	}
	if refused != 3 {
		t.Fatalf("a burst of 200 at 40 per second was refused %d times", refused)
	}
	metrics := gatewaytest.ScrapeUntil(t, g.MetricsAddr, `gateway_requests_total{code="rate_limited",endpoint_family="chat.completions"} 3`)
	if strings.Contains(metrics, kid) || strings.Contains(metrics, k["key"].(map[string]any)["prefix"].(string)) {
		t.Error("/metrics names the key")
	}
	// Another key of the profile, without limits, gets no rate-limit headers.
	if _, hdr, _ := g.Post("/v1/chat/completions", map[string]string{"Authorization": "Bearer " + g.Key}, chat); hdr.Get("X-Ratelimit-Limit-Requests") != "" {
		t.Errorf("an unlimited key got %v", hdr)
	}
}

// max_tokens_per_minute end to end: admission counts the worst case (input estimate plus
// max_tokens) and says so in the -tokens headers, the charge corrects the count to the
// reported usage before the answer's end, and a request whose worst case does not fit is
// refused 429 with retry-after and the headers.
func TestTokensPerMinuteEndToEnd(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	k := g.Admin("POST", "/admin/v1/profiles/"+g.ProfileID+"/keys", `{"name":"tpm","allowed_endpoints":["*"],"allowed_models":["*"],"max_tokens_per_minute":1000}`)
	if got := k["key"].(map[string]any)["max_tokens_per_minute"]; got != float64(1000) {
		t.Fatalf("created key shows max_tokens_per_minute %v", got)
	}
	key := k["secret"].(string)
	const chat = `{"model":"m-openai","max_tokens":300,"messages":[{"role":"user","content":"hi"}]}`
	used := func(raw []byte) int {
		var a struct {
			Usage struct {
				Total int `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(raw, &a); err != nil || a.Usage.Total <= 0 {
			t.Fatalf("usage of %s: %v", raw, err)
		}
		return a.Usage.Total
	}
	remaining := func(h http.Header) int {
		n, err := strconv.Atoi(h.Get("X-Ratelimit-Remaining-Tokens"))
		if err != nil {
			t.Fatalf("x-ratelimit-remaining-tokens %q", h.Get("X-Ratelimit-Remaining-Tokens"))
		}
		return n
	}
	status, h1, raw := g.Post("/v1/chat/completions", gatewaytest.Bearer(key), chat)
	if status != 200 || h1.Get("X-Ratelimit-Limit-Tokens") != "1000" || h1.Get("X-Ratelimit-Reset-Tokens") != "1m0s" ||
		h1.Get("X-Ratelimit-Limit-Requests") != "" {
		t.Fatalf("first: %d %s %v", status, raw, h1)
	}
	worst := 1000 - remaining(h1)
	if worst <= 300 || worst >= 700 {
		t.Fatalf("the first counted %d tokens, want max_tokens 300 plus the input estimate", worst)
	}
	// The second sees the first corrected to its usage, and counts its own worst case.
	status, h2, raw2 := g.Post("/v1/chat/completions", gatewaytest.Bearer(key), chat)
	if status != 200 {
		t.Fatalf("second: %d %s", status, raw2)
	}
	if got, want := remaining(h2), 1000-used(raw)-worst; got != want {
		t.Errorf("after the first settled at %d tokens: remaining %d, want %d", used(raw), got, want)
	}
	// A worst case larger than what is left is refused, before its request id is taken.
	big := `{"model":"m-openai","max_tokens":900,"messages":[{"role":"user","content":"hi"}]}`
	withID := map[string]string{"Authorization": "Bearer " + key, "X-Request-Id": "tpm-big-1"}
	status, h3, raw3 := g.Post("/v1/chat/completions", withID, big)
	if code, _, _ := gatewaytest.Envelope(t, raw3); status != 429 || code != "rate_limited" || h3.Get("Retry-After") == "" ||
		h3.Get("X-Ratelimit-Limit-Tokens") != "1000" || remaining(h3) != 1000-used(raw)-used(raw2) {
		t.Fatalf("a worst case past the minute's room: %d %s %v", status, raw3, h3)
	}
	// UpdateKey lifts the limit; the next answer has no token headers.
	g.Admin("PATCH", "/admin/v1/keys/"+k["key"].(map[string]any)["id"].(string)+"?update_mask=max_tokens_per_minute", `{"max_tokens_per_minute":0}`)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		status, h, raw := g.Post("/v1/chat/completions", withID, big) // the refused request's id again
		if status == 200 && h.Get("X-Ratelimit-Limit-Tokens") == "" {
			break
		}
		if code, _, _ := gatewaytest.Envelope(t, raw); code == "duplicate_request_id" {
			t.Fatalf("the id of a request refused by the token limit was taken: %s", raw)
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the limit was lifted: %d %s %v", status, raw, h)
		}
	}
}
