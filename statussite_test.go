package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/store/storetest"
)

// summary reads the status site's summary.json from this gateway.
func (e *env) summary(t *testing.T) (gatewaytest.StatusSummary, string) {
	t.Helper()
	return gatewaytest.Summary(t, e.base)
}

// Live traffic through one replica shows on both, with the same numbers: served requests and
// upstream failures count, a client's missing balance does not; an operator's incident shows
// on every replica until it is resolved.
func TestStatusSiteIsTheSameOnTwoReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := storetest.DatabaseURL(t)
	a := startGenOn(t, dbURL, true)
	b := startGenOn(t, dbURL, false)
	a.key, _ = a.newProfile(t, "status-user", "1000")
	broke, _ := a.newProfile(t, "status-broke", "0")

	chat := func(g *genEnv, key, text string, stream bool) int {
		g.key = key
		body := `{"model":"m-openai","messages":[{"role":"user","content":"` + text + `"}]` + map[bool]string{true: `,"stream":true`, false: ""}[stream] + `}`
		status, _, _ := g.post(t, "/v1/chat/completions", nil, body)
		return status
	}
	okKey := a.key
	// Keys reach the other replica within a second (contract); wait until b knows both.
	for _, k := range []string{okKey, broke} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			status, _, _ := b.do("GET", "/v1/models", bearer(k), "")
			if status == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica b does not know the key after 10 s: %d", status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for i, g := range []*genEnv{a, b, a} {
		if s := chat(g, okKey, "hello", i == 1); s != http.StatusOK {
			t.Fatalf("chat %d: %d", i, s)
		}
	}
	if s := chat(b, okKey, "#sim:fail=500", false); s < 500 {
		t.Fatalf("upstream failure answered %d", s)
	}
	// 20 counted requests: enough for the ratio to show (contract.md: at least 20 requests
	// or 5 failures in a row before a component is degraded or out).
	for range 16 {
		if s := chat(a, okKey, "hello", false); s != http.StatusOK {
			t.Fatalf("chat: %d", s)
		}
	}
	if s := chat(a, broke, "hello", false); s != http.StatusPaymentRequired {
		t.Fatalf("no balance answered %d, want 402", s)
	}
	b.key = okKey
	if s, _, _ := b.post(t, "/v1/messages", map[string]string{"anthropic-version": "2023-06-01"}, `{"model":"m-anthropic","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`); s != http.StatusOK {
		t.Fatalf("messages: %d", s)
	}
	inc := a.admin("POST", "/admin/v1/incidents", `{"title":"Slow chat answers","body":"Looking into it.","components":["chat-completions"],"impact":"major"}`)
	for _, g := range []*genEnv{a, b} {
		if err := g.g.Status.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}

	sa, rawA := a.summary(t)
	sb, rawB := b.summary(t)
	strip := func(s string) string { // the generation time and the listener-derived URLs differ
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.Contains(l, "updated_at") && !strings.Contains(l, "127.0.0.1") {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	if strip(rawA) != strip(rawB) {
		t.Errorf("replicas disagree:\n%s\n---\n%s", rawA, rawB)
	}
	byID := map[string]int{}
	for i, c := range sa.Components {
		byID[c.ID] = i
	}
	cc := sa.Components[byID["chat-completions"]]
	if cc.Metrics.Requests != 20 || cc.Metrics.Failures != 1 || cc.Status != "degraded_performance" || *cc.Metrics.SuccessRatio != 0.95 || cc.Metrics.P50Ms == nil {
		t.Errorf("chat-completions: %+v, want 19 of 20 served (the 402 left out), degraded performance", cc)
	}
	if m := sa.Components[byID["messages"]]; m.Status != "operational" || m.Metrics.Requests != 1 {
		t.Errorf("messages: %+v", m)
	}
	if e := sa.Components[byID["images"]]; e.Status != "operational" || e.Metrics.Requests != 0 || e.Metrics.SuccessRatio != nil {
		t.Errorf("images without traffic: %+v, want operational with zero requests (Statuspage has no no_data)", e)
	}
	if ad := sa.Components[byID["admin-api"]]; ad.Status != "operational" || ad.Metrics.Requests == 0 {
		t.Errorf("admin-api: %+v, want the admin calls counted", ad)
	}
	if bot := sa.Components[byID["chat-bot"]]; bot.Status != "operational" || bot.Metrics.Requests != 0 {
		t.Errorf("chat-bot before any report: %+v", bot)
	}
	if len(sb.Incidents) != 1 || sb.Incidents[0].Name != "Slow chat answers" || sb.Incidents[0].Status != "investigating" || sb.Status.Indicator != "major" {
		t.Errorf("incident on the other replica: %+v %+v", sb.Incidents, sb.Status)
	}

	id := inc["id"].(string)
	b.admin("POST", "/admin/v1/incidents/"+id+":update", `{"status":"identified","body":"An upstream is slow."}`)
	b.admin("POST", "/admin/v1/incidents/"+id+":resolve", `{"body":"Fixed."}`)
	if sa, _ := a.summary(t); len(sa.Incidents) != 0 {
		t.Errorf("a resolved incident is still open: %+v", sa.Incidents)
	}
	list := a.admin("GET", "/admin/v1/incidents?include_resolved=true", "")
	got := list["incidents"].([]any)[0].(map[string]any)
	if got["status"] != "resolved" || len(got["updates"].([]any)) != 3 || got["resolve_time"] == nil {
		t.Errorf("resolved incident: %v", got)
	}
	if status, _, out := a.do("POST", "/admin/v1/incidents", map[string]string{"Authorization": "Bearer " + adminToken}, `{"title":"x","body":"y","components":["nope"]}`); status != http.StatusBadRequest || code(out) != "invalid_request_error" {
		t.Errorf("unknown component: %d %v", status, out)
	}
	resp, err := http.Get(a.base + "/status")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "Slow chat answers") || !strings.Contains(string(page), "m-openai") || !strings.Contains(string(page), "Degraded performance") || !strings.Contains(string(page), "No data") {
		t.Errorf("status page lacks the incident, the matrix or the state")
	}
	resp, err = http.Get(a.base + "/docs")
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(docs), a.base+"/v1") {
		t.Errorf("docs do not show the listener-derived base URL %s/v1", a.base)
	}
}

// A stream's latency is its time to first token: a stream that pauses 1.5 s after its first
// chunk is fast, the same answer unstreamed is slow.
func TestStreamLatencyIsTimeToFirstToken(t *testing.T) {
	t.Parallel()
	p50 := func(stream bool) float64 {
		g := startGen(t)
		body := `{"model":"m-openai","messages":[{"role":"user","content":"#sim:stall=1500ms"}]` + map[bool]string{true: `,"stream":true`, false: ""}[stream] + `}`
		if s, _, raw := g.post(t, "/v1/chat/completions", nil, body); s != http.StatusOK {
			t.Fatalf("chat: %d %s", s, raw)
		}
		if err := g.g.Status.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		s, _ := g.summary(t)
		for _, c := range s.Components {
			if c.ID == "chat-completions" && c.Metrics.P50Ms != nil {
				return *c.Metrics.P50Ms
			}
		}
		t.Fatalf("no chat-completions latency: %+v", s.Components)
		return 0
	}
	if got := p50(true); got >= 1500 {
		t.Errorf("streamed p50 %v ms, want the time to the first token, under the 1.5 s pause", got)
	}
	if got := p50(false); got < 1500 {
		t.Errorf("unstreamed p50 %v ms, want at least the 1.5 s pause", got)
	}
}
