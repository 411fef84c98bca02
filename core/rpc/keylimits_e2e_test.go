package rpc_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"

	"modelgateway/core/gatewaytest"
)

// Per-key request limits (issue 16): set through the admin API, enforced on every route that
// reaches an upstream, answered 429 rate_limited with Retry-After.
func TestPerKeyRequestLimits(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	chat := `{"model":"m-openai","messages":[{"role":"user","content":"hi"}]}`

	// Concurrency: one request in flight; a second is refused while the first streams.
	k := g.Admin("POST", "/admin/v1/profiles/"+g.ProfileID+"/keys", `{"name":"one","allowed_endpoints":["*"],"allowed_models":["*"],"max_concurrent_requests":1}`)
	key := k["secret"].(string)
	if got := k["key"].(map[string]any)["max_concurrent_requests"]; got != float64(1) {
		t.Fatalf("created key shows max_concurrent_requests %v", got)
	}
	req, _ := http.NewRequest("POST", g.Base+"/v1/chat/completions",
		strings.NewReader(`{"model":"m-openai","stream":true,"messages":[{"role":"user","content":"hi #sim:stall=3s"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("first request: %v %v", err, resp)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil { // it is streaming
		t.Fatal(err)
	}
	status, hdr, raw := g.Post("/v1/chat/completions", map[string]string{"Authorization": "Bearer " + key}, chat)
	if code, _, _ := gatewaytest.Envelope(t, raw); status != 429 || code != "rate_limited" || hdr.Get("Retry-After") == "" {
		t.Fatalf("second request in flight: %d %s retry-after %q", status, raw, hdr.Get("Retry-After"))
	}
	resp.Body.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if status, _, _ := g.Post("/v1/chat/completions", map[string]string{"Authorization": "Bearer " + key}, chat); status == 200 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("after the first request ended: %d", status)
		}
	}

	// Requests per second, changed on the existing key through UpdateKey: of a burst, the
	// first passes and the next is refused.
	id := k["key"].(map[string]any)["id"].(string)
	upd := g.Admin("PATCH", "/admin/v1/keys/"+id, `{"max_requests_per_second":1}`)
	if upd["max_requests_per_second"] != float64(1) || upd["max_concurrent_requests"] != float64(1) {
		t.Fatalf("updated key %v", upd)
	}
	count := `{"model":"m-openai","messages":[{"role":"user","content":"hi"}]}`
	anth := map[string]string{"Authorization": "Bearer " + key, "anthropic-version": "2023-06-01"}
	var codes []int
	for range 3 {
		status, hdr, raw := g.Post("/v1/messages/count_tokens", anth, count)
		codes = append(codes, status)
		if status == 429 {
			if code, _, _ := gatewaytest.Envelope(t, raw); code != "rate_limited" || hdr.Get("Retry-After") == "" {
				t.Errorf("rate refusal %s retry-after %q", raw, hdr.Get("Retry-After"))
			}
		}
	}
	if codes[0] != 200 || codes[2] != 429 {
		t.Errorf("a burst of three at 1 request per second answered %v", codes)
	}
	// Another key of the same profile is not limited by this one.
	if status, _, raw := g.Post("/v1/messages/count_tokens", map[string]string{"anthropic-version": "2023-06-01"}, count); status != 200 {
		t.Errorf("the other key: %d %s", status, raw)
	}
}
