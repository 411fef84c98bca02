package bot_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"modelgateway/core/gatewaytest"
)

// The Mini App (issue 36): the real bot binary serves the page and its API on
// GATEWAY_BOT_WEBAPP_ADDR, sets the menu button, and answers every API call only with a valid,
// fresh initData; a user reaches only their own keys.

// initData signs launch data the way Telegram does (core.telegram.org/bots/webapps,
// "Validating data received via the Mini App") for a user, authenticated at auth.
func initData(token string, user int64, name string, auth time.Time) string {
	fields := map[string]string{
		"query_id":  "AAHdF6IQAAAAAN0XohDhrOrc",
		"user":      fmt.Sprintf(`{"id":%d,"first_name":%q,"last_name":"","username":"u%d","language_code":"en","allows_write_to_pm":true}`, user, name, user),
		"auth_date": strconv.FormatInt(auth.Unix(), 10),
		"signature": "not-checked-by-bots",
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	q := url.Values{}
	lines := make([]string, 0, len(keys))
	for _, k := range keys {
		lines = append(lines, k+"="+fields[k])
		q.Set(k, fields[k])
	}
	secret := hmac.New(sha256.New, []byte("WebAppData"))
	secret.Write([]byte(token))
	h := hmac.New(sha256.New, secret.Sum(nil))
	h.Write([]byte(strings.Join(lines, "\n")))
	q.Set("hash", hex.EncodeToString(h.Sum(nil)))
	return q.Encode()
}

// miniApp is a gateway with the test catalogue and a bot serving the Mini App.
type miniApp struct {
	e    *gatewaytest.Gateway
	h    *botHarness
	base string // http://127.0.0.1:port of the Mini App
}

func startMiniApp(t *testing.T, extra ...string) *miniApp {
	t.Helper()
	e := gatewaytest.Start(t, gatewaytest.Options{})
	e.Admin("POST", "/admin/v1/catalog:apply", botCatalog)
	addr := fmt.Sprintf("127.0.0.1:%d", gatewaytest.FreePort(t))
	h := newBotHarness(t, e.GRPCAddr, append([]string{"GATEWAY_BOT_WEBAPP_ADDR=" + addr, "GATEWAY_BOT_WEBAPP_URL=https://app.example/tg/",
		"GATEWAY_BOT_STARS_RATE=" + starsRate, "GATEWAY_BOT_KEY_LIMITS=max_requests_per_second=100,max_tokens_per_minute=200000"}, extra...)...)
	h.start()
	m := &miniApp{e: e, h: h, base: "http://" + addr}
	gatewaytest.WaitFor(t, 30*time.Second, "the mini app listening", func() bool {
		resp, err := http.Get(m.base + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	return m
}

// call is one API request with an Authorization header ("" for none); it returns the status
// and the decoded JSON.
func (m *miniApp) call(t *testing.T, auth, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, m.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %d, not JSON: %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

// as is a user of the Mini App.
type appUser struct {
	m    *miniApp
	auth string
}

func (m *miniApp) user(id int64, name string) *appUser {
	return &appUser{m: m, auth: "tma " + initData(botToken, id, name, time.Now().Add(-time.Minute))}
}

// do calls the API and fails the test unless the status is want.
func (u *appUser) do(t *testing.T, want int, method, path, body string) map[string]any {
	t.Helper()
	code, out := u.m.call(t, u.auth, method, path, body)
	if code != want {
		t.Fatalf("%s %s: %d %v, want %d", method, path, code, out, want)
	}
	return out
}

func errMessage(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

// chat makes one real request with a key, so the usage is real: metered, charged, recorded.
func chat(t *testing.T, e *gatewaytest.Gateway, key, model, id string) {
	t.Helper()
	status, _, raw := e.Do("POST", "/v1/chat/completions", map[string]string{"Authorization": "Bearer " + key, "X-Request-Id": id},
		`{"model":"`+model+`","max_tokens":12,"messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 {
		t.Fatalf("chat %s: %d %v", id, status, raw)
	}
}

// backdate moves requests' start times days back, so real usage spreads over the window.
func backdate(t *testing.T, e *gatewaytest.Gateway, days map[string]int) {
	t.Helper()
	for id, d := range days {
		if _, err := e.Pool().Exec(context.Background(), `UPDATE requests SET start_time = start_time - make_interval(days => $2) WHERE request_id = $1`, id, d); err != nil {
			t.Fatal(err)
		}
	}
}

// usageFixture gives Ann (101) a balance, two keys made through the Mini App and real
// requests spread over three weeks and two models; it returns Ann, her key ids and pid.
func (m *miniApp) usageFixture(t *testing.T) (ann *appUser, laptop, desk map[string]any, pid string) {
	t.Helper()
	ann = m.user(101, "Ann")
	me := ann.do(t, 200, "GET", "/api/me", "")
	pid = me["profile"].(map[string]any)["id"].(string)
	m.e.Admin("POST", "/admin/v1/profiles/"+pid+":credit", `{"amount":"500","reason":"top-up","idempotency_key":"app-1"}`)
	k1 := ann.do(t, 200, "POST", "/api/keys", `{"name":"laptop"}`)
	k2 := ann.do(t, 200, "POST", "/api/keys", `{"name":"ci-runner"}`)
	laptop, desk = k1["key"].(map[string]any), k2["key"].(map[string]any)
	back := map[string]int{}
	n := 0
	for day := 0; day < 21; day += 1 + day%3 {
		for i := 0; i <= (day*7)%4; i++ {
			n++
			id := fmt.Sprintf("app-%d", n)
			key, model := k1["secret"].(string), "b-model"
			if n%3 == 0 {
				key, model = k2["secret"].(string), "c-model"
			}
			chat(t, m.e, key, model, id)
			back[id] = day
		}
	}
	gatewaytest.Settled(t, m.e.Pool(), pid, n)
	backdate(t, m.e, back)
	return ann, laptop, desk, pid
}

func TestBotMiniAppAPI(t *testing.T) {
	t.Parallel()
	m := startMiniApp(t)

	// The menu button: the Mini App for every private chat (no chat_id), as a web_app.
	mb := m.h.tg.waitCall(0, "setChatMenuButton", nil)
	if _, has := mb.Fields["chat_id"]; has || !strings.Contains(mb.Fields["menu_button"], `"type":"web_app"`) ||
		!strings.Contains(mb.Fields["menu_button"], `"url":"https://app.example/tg/"`) {
		t.Fatalf("setChatMenuButton %v", mb.Fields)
	}

	mustContain(t, "/help with the Mini App", m.h.user(303, "Cy").say("/help").Fields["text"], "The menu button opens a page")

	// The page: plain HTML under a CSP that allows only itself and Telegram's script.
	resp, err := http.Get(m.base + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self' https://telegram.org") || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("page headers %v", resp.Header)
	}
	mustContain(t, "page", string(page), `<html lang="en">`, `src="https://telegram.org/js/telegram-web-app.js"`, `src="app.js"`)

	ann, laptop, _, pid := m.usageFixture(t)
	bob := m.user(202, "Bob")

	// Who may call: a valid initData is answered; none, a forged one, one signed with another
	// bot's token, a stale one and one without a user are 401, and none of them reaches a key.
	me := ann.do(t, 200, "GET", "/api/me", "")
	if me["user"].(map[string]any)["id"] != float64(101) || len(me["keys"].([]any)) != 2 {
		t.Fatalf("/api/me: %v", me)
	}
	valid := initData(botToken, 101, "Ann", time.Now().Add(-time.Minute))
	forged := strings.Replace(valid, "%22id%22%3A101", "%22id%22%3A202", 1)
	if forged == valid {
		t.Fatal("nothing to forge in the initData")
	}
	noUser := url.Values{}
	for _, tc := range []struct{ name, auth string }{
		{"no header", ""},
		{"another scheme", "Bearer " + valid},
		{"another user's id under Ann's hash", "tma " + forged},
		{"signed with another bot's token", "tma " + initData("999:OTHER-token", 101, "Ann", time.Now())},
		{"stale: 25 h old", "tma " + initData(botToken, 101, "Ann", time.Now().Add(-25*time.Hour))},
		{"a hash of nothing", "tma " + noUser.Encode() + "auth_date=1&hash=00"},
	} {
		for _, path := range []string{"/api/me", "/api/usage?key=" + laptop["id"].(string), "/api/models"} {
			if code, out := m.call(t, tc.auth, "GET", path, ""); code != 401 || errMessage(out) == "" {
				t.Fatalf("%s, GET %s: %d %v, want 401", tc.name, path, code, out)
			}
		}
		if code, _ := m.call(t, tc.auth, "POST", "/api/keys/"+laptop["id"].(string)+"/revoke", ""); code != 401 {
			t.Fatalf("%s: revoke answered %d", tc.name, code)
		}
	}

	// Usage: 30 days, each present; the costs add up to what the ledger charged.
	u := ann.do(t, 200, "GET", "/api/usage", "")
	days := u["days"].([]any)
	if len(days) != 30 || days[29].(map[string]any)["day"] != time.Now().UTC().Format("2006-01-02") {
		t.Fatalf("usage days: %d, last %v", len(days), days[len(days)-1])
	}
	bal, _, _ := gatewaytest.LedgerOf(t, m.e.Pool(), pid)
	charged := decimal.NewFromInt(500).Sub(bal)
	if tot := decimal.RequireFromString(u["total"].(string)); !tot.Equal(charged) || !tot.IsPositive() {
		t.Fatalf("usage total %s, ledger charged %s", tot, charged)
	}
	sum := decimal.Zero
	spent := 0
	for _, d := range days {
		c := decimal.RequireFromString(d.(map[string]any)["cost"].(string))
		sum = sum.Add(c)
		if c.IsPositive() {
			spent++
		}
	}
	if !sum.Equal(charged) || spent < 8 {
		t.Fatalf("days add up to %s over %d days, want %s over 8 or more", sum, spent, charged)
	}
	if ms := u["models"].([]any); len(ms) != 2 || ms[0].(map[string]any)["model"] != "b-model" {
		t.Fatalf("usage models: %v", ms)
	}
	one := ann.do(t, 200, "GET", "/api/usage?key="+laptop["id"].(string), "")
	if ms := one["models"].([]any); len(ms) != 1 || ms[0].(map[string]any)["model"] != "b-model" {
		t.Fatalf("usage of one key: %v", one["models"])
	}

	// Another user's key id is refused for every action, and nothing changes on it; the body
	// cannot name the user.
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/api/usage?key=" + laptop["id"].(string), ""},
		{"PATCH", "/api/keys/" + laptop["id"].(string), `{"budget":{"amount":"1","period":"DAY"}}`},
		{"POST", "/api/keys/" + laptop["id"].(string) + "/revoke", ""},
		{"POST", "/api/keys/" + laptop["id"].(string) + "/rotate", ""},
	} {
		if out := bob.do(t, 404, tc.method, tc.path, tc.body); !strings.Contains(errMessage(out), "not one of your keys") {
			t.Fatalf("Bob %s %s: %v", tc.method, tc.path, out)
		}
	}
	bobKey := bob.do(t, 200, "POST", "/api/keys", `{"name":"bobs","user":{"id":101},"profile_id":"`+pid+`"}`)
	if n := len(keysOf(m.e, pid)); n != 2 {
		t.Fatalf("Ann has %d keys after Bob named her in a body", n)
	}
	if bp := profileByRef(m.e, "tg:202")["id"].(string); len(keysOf(m.e, bp)) != 1 || bobKey["secret"] == "" {
		t.Fatalf("Bob's key: %v", bobKey)
	}
	for _, k := range keysOf(m.e, pid) {
		if k["state"] != "ACTIVE" || k["budget"] != nil {
			t.Fatalf("Ann's key after Bob's attempts: %v", k)
		}
	}

	// Ann edits her budget, rotates and revokes; the secret comes once, with the rotation.
	k := ann.do(t, 200, "PATCH", "/api/keys/"+laptop["id"].(string), `{"budget":{"amount":"25.5","period":"WEEK"}}`)["key"].(map[string]any)
	if b := k["budget"].(map[string]any); b["amount"] != "25.5" || b["period"] != "WEEK" || k["budget_spent"] == "" {
		t.Fatalf("budget: %v", k)
	}
	if out := ann.do(t, 400, "PATCH", "/api/keys/"+laptop["id"].(string), `{"budget":{"amount":"-1","period":"WEEK"}}`); !strings.Contains(errMessage(out), "positive") {
		t.Fatalf("a negative budget: %v", out)
	}
	if k = ann.do(t, 200, "PATCH", "/api/keys/"+laptop["id"].(string), `{"budget":null}`)["key"].(map[string]any); k["budget"] != nil {
		t.Fatalf("budget removed: %v", k)
	}
	rot := ann.do(t, 200, "POST", "/api/keys/"+laptop["id"].(string)+"/rotate", "")
	if s, _ := rot["secret"].(string); len(s) < 20 || rot["key"].(map[string]any)["id"] == laptop["id"] {
		t.Fatalf("rotate: %v", rot)
	}
	chat(t, m.e, rot["secret"].(string), "b-model", "after-rotate")
	ann.do(t, 409, "POST", "/api/keys/"+laptop["id"].(string)+"/rotate", "")
	me = ann.do(t, 200, "GET", "/api/me", "")
	for _, k := range me["keys"].([]any) {
		if _, has := k.(map[string]any)["secret"]; has {
			t.Fatalf("/api/me shows a secret: %v", k)
		}
	}
	ann.do(t, 200, "POST", "/api/keys/"+rot["key"].(map[string]any)["id"].(string)+"/revoke", "")

	// Models with prices in the billing currency.
	ms := ann.do(t, 200, "GET", "/api/models", "")
	if ms["currency"] != "RUB" || !strings.Contains(fmt.Sprint(ms["models"]), "b-model") || !strings.Contains(fmt.Sprint(ms["models"]), "RUB per 1M tokens") {
		t.Fatalf("models: %v", ms)
	}

	// Top-up: an invoice link in Stars, rounded up; bad amounts refused.
	mark := m.h.tg.mark()
	top := ann.do(t, 200, "POST", "/api/topup", `{"amount":"100"}`)
	inv := m.h.tg.waitCall(mark, "createInvoiceLink", nil)
	if _, has := inv.Fields["provider_token"]; has || inv.Fields["currency"] != "XTR" || invoicePrice(t, inv) != 77 || !strings.HasPrefix(top["link"].(string), "https://t.me/$") || top["credit"] != "100.1" {
		t.Fatalf("top-up: %v, invoice %v", top, inv.Fields)
	}
	if out := ann.do(t, 400, "POST", "/api/topup", `{"amount":"0.1"}`); !strings.Contains(errMessage(out), "from 1 to 13000 RUB") {
		t.Fatalf("a top-up below the minimum: %v", out)
	}
	m.h.stop()
	if strings.Contains(m.h.out.String(), valid) || strings.Contains(m.h.out.String(), rot["secret"].(string)) {
		t.Fatal("the bot log holds an initData or a secret")
	}
	mustContain(t, "bot log", m.h.out.String(), `"route":"GET /api/me","status":401,"error":"refused"`, `"menu button set to the mini app"`)
}
