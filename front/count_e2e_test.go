package front_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/wire/apierror"
)

// Issue 30, shared resources: a counting route costs nothing but is not free for the gateway.
// Each counting route (messages, content generation) is served at a positive balance and is
// then in ListUsage with cost 0 and its token count; the same request at a zero balance is
// 402 insufficient_balance; counting requests use up the key's max_requests_per_second like
// any other request. No money moves.
func TestCountRoutesNeedABalanceAreListedAndLimited(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	const msgs = `{"model":"m-anthropic","messages":[{"role":"user","content":"hi"}]}`
	const gemini = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	routes := []struct{ path, body, family string }{
		{"/v1/messages/count_tokens", msgs, "messages.count_tokens"},
		{"/v1beta/models/m-gemini:countTokens", gemini, "content.count_tokens"},
	}
	key, pid := g.NewProfile("count-rich", "1")
	poor, poorPID := g.NewProfile("count-poor", "0")
	for i, rt := range routes {
		id := fmt.Sprintf("count-%d", i)
		status, _, raw := g.PostAs(key, rt.path, map[string]string{"Anthropic-Version": "2023-06-01", "X-Request-Id": id}, rt.body)
		if status != 200 {
			t.Fatalf("%s at a positive balance: %d %s", rt.path, status, raw)
		}
		status, _, raw = g.PostAs(poor, rt.path, map[string]string{"Anthropic-Version": "2023-06-01"}, rt.body)
		if code, _, _ := gatewaytest.Envelope(t, raw); status != http.StatusPaymentRequired || code != apierror.InsufficientBalance {
			t.Fatalf("%s at a zero balance: %d %s", rt.path, status, raw)
		}
	}
	// ListUsage: both counts, cost 0, family and tokens recorded (written within 2 s).
	var recs []any
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		recs, _ = g.Admin("GET", "/admin/v1/profiles/"+pid+"/usage", "")["records"].([]any)
		done := 0
		for _, r := range recs {
			if r.(map[string]any)["status"] != "in_progress" {
				done++
			}
		}
		if done >= len(routes) || time.Now().After(deadline) {
			break
		}
	}
	seen := map[string]map[string]any{}
	for _, r := range recs {
		m := r.(map[string]any)
		seen[m["request_id"].(string)] = m
	}
	for i, rt := range routes {
		r := seen[fmt.Sprintf("count-%d", i)]
		if r == nil || r["cost"] != "0" || r["endpoint_family"] != rt.family || r["status"] != "ok" || r["input_tokens"] == "0" || r["input_tokens"] == nil {
			t.Fatalf("%s in ListUsage: %v (all: %v)", rt.path, r, recs)
		}
	}
	gatewaytest.CheckMoney(t, g.Pool(), pid)
	if b := gatewaytest.CheckMoney(t, g.Pool(), poorPID); !b.IsZero() {
		t.Fatalf("poor balance %s", b)
	}

	// Key limits: one request per second; counting requests use it up.
	k := g.Admin("POST", "/admin/v1/profiles/"+pid+"/keys", `{"name":"slow","allowed_endpoints":["*"],"allowed_models":["*"],"max_requests_per_second":1}`)
	limited := k["secret"].(string)
	refused := 0
	for range 3 {
		status, _, raw := g.PostAs(limited, routes[0].path, map[string]string{"Anthropic-Version": "2023-06-01"}, routes[0].body)
		switch code := ""; {
		case status == 200:
		case status == http.StatusTooManyRequests:
			if code, _, _ = gatewaytest.Envelope(t, raw); code != apierror.RateLimited {
				t.Fatalf("limited count: %s", raw)
			}
			refused++
		default:
			t.Fatalf("limited count: %d %s", status, raw)
		}
	}
	if refused == 0 || refused == 3 {
		t.Fatalf("%d of 3 counting requests within a second refused at 1 per second", refused)
	}
	// A generation right after is refused too: the counts took the key's second.
	if status, _, raw := g.PostAs(limited, "/v1/chat/completions", nil, gatewaytest.MoneyBody); status != http.StatusTooManyRequests {
		t.Fatalf("a generation after the counts: %d %s", status, raw)
	}
	gatewaytest.CheckMoney(t, g.Pool(), pid)
}
