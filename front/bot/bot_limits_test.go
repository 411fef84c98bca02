package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"modelgateway/core/gatewaytest"
)

// Keys made through the bot carry GATEWAY_BOT_KEY_LIMITS (and the gateway enforces them);
// /usage shows the last 7 days by day and model, of all the user's keys or of one named by
// name or prefix; a record eight days old is left out.
func TestBotKeyLimitsAndUsageByDay(t *testing.T) {
	t.Parallel()
	e := gatewaytest.Start(t, gatewaytest.Options{})
	e.Admin("POST", "/admin/v1/catalog:apply", botCatalog)
	h := newBotHarness(t, e.GRPCAddr, "GATEWAY_BOT_KEY_LIMITS=max_requests_per_second=5,max_concurrent_requests=4,max_tokens_per_minute=10000")
	h.start()
	ann := h.user(101, "Ann")
	ann.say("/start")
	pid, _ := profileByRef(e, "tg:101")["id"].(string)
	e.Admin("POST", "/admin/v1/profiles/"+pid+":credit", `{"amount":"100","reason":"top-up","idempotency_key":"u1"}`)

	// /newkey with everything chosen: Next, Next, Create.
	r := ann.say("/newkey laptop")
	kbMsg := r.MessageID
	m := h.tg.mark()
	ann.press(kbMsg, buttons(t, r)["Next ›"])
	ed := h.tg.waitCall(m, "editMessageText", nil)
	m = h.tg.mark()
	ann.press(kbMsg, buttons(t, ed)["Next ›"])
	ed = h.tg.waitCall(m, "editMessageText", nil)
	m = h.tg.mark()
	if ans := ann.press(kbMsg, buttons(t, ed)["✅ Create key"]); ans != "Key created." {
		t.Fatalf("create answered %q", ans)
	}
	sec := h.tg.waitCall(m, "sendMessage", func(c tgCall) bool { return c.Fields["protect_content"] == "true" })
	found := secretPattern.FindStringSubmatch(sec.Fields["text"])
	if found == nil {
		t.Fatalf("no secret: %s", sec.Fields["text"])
	}
	laptop := found[1]
	ks := keysOf(e, pid)
	if len(ks) != 1 || ks[0]["max_requests_per_second"] != float64(5) || ks[0]["max_concurrent_requests"] != float64(4) ||
		ks[0]["max_tokens_per_minute"] != float64(10000) {
		t.Fatalf("the bot's key: %v", ks)
	}
	// A key made through the admin API directly has none of the bot's limits.
	desk := e.Admin("POST", "/admin/v1/profiles/"+pid+"/keys", `{"name":"desk","allowed_endpoints":["*"],"allowed_models":["*"]}`)

	chat := func(key, model, id string) {
		t.Helper()
		status, hdr, raw := e.Do("POST", "/v1/chat/completions", map[string]string{"Authorization": "Bearer " + key, "X-Request-Id": id},
			`{"model":"`+model+`","max_tokens":12,"messages":[{"role":"user","content":"hi"}]}`)
		if status != 200 {
			t.Fatalf("chat %s: %d %v", id, status, raw)
		}
		if key == laptop && hdr.Get("X-Ratelimit-Limit-Requests") != "5" {
			t.Errorf("the bot's key answered without its limit: %v", hdr)
		}
	}
	chat(laptop, "b-model", "u-today")
	chat(laptop, "b-model", "u-3days")
	chat(laptop, "b-model", "u-8days")
	chat(desk["secret"].(string), "c-model", "u-desk")
	// Two of the laptop's records started earlier.
	for id, shift := range map[string]string{"u-3days": "3 days", "u-8days": "8 days"} {
		if _, err := e.Pool().Exec(context.Background(), `UPDATE requests SET start_time = start_time - $2::interval WHERE request_id = $1`, id, shift); err != nil {
			t.Fatal(err)
		}
	}
	today := time.Now().UTC().Format("2006-01-02")
	three := time.Now().UTC().AddDate(0, 0, -3).Format("2006-01-02")
	eight := time.Now().UTC().AddDate(0, 0, -8).Format("2006-01-02")

	r = ann.say("/usage")
	mustContain(t, "/usage", r.Fields["text"], "last 7 days", "all your keys", today, three, "b-model", "c-model", "output 12", "RUB", "Total: 3 requests")
	if strings.Contains(r.Fields["text"], eight) {
		t.Errorf("/usage shows a day eight days back:\n%s", r.Fields["text"])
	}
	// The day lines come in order, each model under its day.
	if i, j := strings.Index(r.Fields["text"], three), strings.Index(r.Fields["text"], today); i > j {
		t.Errorf("days out of order:\n%s", r.Fields["text"])
	}

	r = ann.say("/usage laptop")
	mustContain(t, "/usage laptop", r.Fields["text"], "key <b>laptop</b>", today, three, "b-model", "Total: 2 requests")
	if strings.Contains(r.Fields["text"], "c-model") {
		t.Errorf("/usage laptop shows the other key's model:\n%s", r.Fields["text"])
	}
	r = ann.say("/usage " + desk["key"].(map[string]any)["prefix"].(string))
	mustContain(t, "/usage by prefix", r.Fields["text"], "key <b>desk</b>", "c-model", "Total: 1 requests")
	r = ann.say("/usage nosuch")
	mustContain(t, "/usage of no key", r.Fields["text"], "no key with that name")
}
