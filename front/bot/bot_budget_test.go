package bot_test

import (
	"strings"
	"testing"
	"time"

	"modelgateway/core/gatewaytest"
)

// The bot's /limit sets and removes a key's budget through UpdateKey, and /keys shows each
// key's spend in its window, its budget and its expiry (issue 32).
func TestBotLimitAndKeysShowBudgets(t *testing.T) {
	t.Parallel()
	e := gatewaytest.Start(t, gatewaytest.Options{})
	e.Admin("POST", "/admin/v1/catalog:apply", botCatalog)
	h := newBotHarness(t, e.GRPCAddr)
	h.start()
	ann := h.user(111, "Ann")
	ann.say("/start")
	pid, _ := profileByRef(e, "tg:111")["id"].(string)
	if pid == "" {
		t.Fatal("/start made no profile tg:111")
	}
	k := e.Admin("POST", "/admin/v1/profiles/"+pid+"/keys", `{"name":"laptop","allowed_endpoints":["*"],"allowed_models":["*"],"expire_time":"2030-01-02T03:04:05Z"}`)
	_ = k

	r := ann.say("/keys")
	mustContain(t, "/keys without a budget", r.Fields["text"], "laptop", "budget: none", "expires 2030-01-02 03:04 UTC")

	for _, c := range []struct{ say, reply string }{
		{"/limit", "Usage: /limit"},
		{"/limit laptop", "Usage: /limit"},
		{"/limit laptop -3", "positive number"},
		{"/limit laptop 5 year", "day, week, month or total"},
		{"/limit nosuch 5", "no active key"},
	} {
		mustContain(t, c.say, ann.say(c.say).Fields["text"], c.reply)
	}
	if b := keysOf(e, pid)[0]["budget"]; b != nil {
		t.Fatalf("a refused /limit set a budget: %v", b)
	}

	// The default period is the month; the spend shows against it.
	r = ann.say("/limit laptop 2.5")
	mustContain(t, "/limit", r.Fields["text"], "Saved", "laptop", "budget: 0 of 2.5 RUB per month, resets "+
		time.Date(time.Now().UTC().Year(), time.Now().UTC().Month()+1, 1, 0, 0, 0, 0, time.UTC).Format("2006-01-02")+" 00:00 UTC")
	if b := keysOf(e, pid)[0]["budget"].(map[string]any); b["amount"] != "2.5" || b["period"] != "MONTH" {
		t.Fatalf("budget %v", b)
	}
	// A request's charge shows as the window's spend in /keys.
	e.Admin("POST", "/admin/v1/profiles/"+pid+":credit", `{"amount":"10","reason":"topup","idempotency_key":"c1"}`)
	status, hdr, body := e.Do("POST", "/v1/chat/completions", gatewaytest.Bearer(k["secret"].(string)), `{"model":"b-model","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`)
	cost := hdr.Get("X-Request-Cost")
	if status != 200 || cost == "" {
		t.Fatalf("chat: %d %v cost %q", status, body, cost)
	}
	r = ann.say("/keys")
	mustContain(t, "/keys after a request", r.Fields["text"], "budget: "+cost+" of 2.5 RUB per month")
	r = ann.say("/limit laptop 1 total")
	mustContain(t, "/limit total", r.Fields["text"], "budget: "+cost+" of 1 RUB in total")
	if strings.Contains(r.Fields["text"], "resets") {
		t.Fatalf("a TOTAL budget shows a reset: %s", r.Fields["text"])
	}
	r = ann.say("/keys")
	mustContain(t, "/keys with a budget", r.Fields["text"], "budget: "+cost+" of 1 RUB in total", "expires 2030-01-02")

	r = ann.say("/limit laptop off")
	mustContain(t, "/limit off", r.Fields["text"], "budget: none")
	if b := keysOf(e, pid)[0]["budget"]; b != nil {
		t.Fatalf("/limit off left the budget %v", b)
	}
}
