package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/store/storetest"
)

// The bot tests run the real binary (`gateway bot`) against a fake Telegram Bot API
// (telegram_fake_test.go) and a real gateway on a real PostgreSQL.

const botToken = "123456:TEST-bot-token-never-logged"

// botRun is one `gateway bot` process; out collects the logs of every run of a test.
type botRun struct {
	cmd  *exec.Cmd
	done chan error
}

type botHarness struct {
	t   testing.TB
	tg  *fakeTelegram
	env []string
	out *gatewaytest.SyncBuffer
	run *botRun
}

func newBotHarness(t testing.TB, grpcAddr string, extra ...string) *botHarness {
	h := &botHarness{t: t, tg: newFakeTelegram(t, botToken), out: &gatewaytest.SyncBuffer{}}
	h.env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"TELEGRAM_BOT_TOKEN=" + botToken,
		"TELEGRAM_API_URL=" + h.tg.URL(),
		"GATEWAY_ADMIN_ADDR=" + grpcAddr,
		"GATEWAY_ADMIN_TOKEN=" + gatewaytest.AdminToken,
		"GATEWAY_PUBLIC_BASE_URL=https://gw.example",
		"GATEWAY_BOT_POLL_TIMEOUT=1s",
	}, extra...)
	t.Cleanup(func() {
		h.stop()
		if t.Failed() {
			t.Logf("bot output:\n%s", h.out.String())
		}
	})
	return h
}

func (h *botHarness) start() {
	h.t.Helper()
	cmd := exec.Command(gatewaytest.Binary(h.t), "bot")
	cmd.Env = h.env
	cmd.Stdout, cmd.Stderr = h.out, h.out
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	r := &botRun{cmd: cmd, done: make(chan error, 1)}
	go func() { r.done <- cmd.Wait() }()
	h.run = r
}

// stop ends the process with SIGTERM, as an operator's supervisor would.
func (h *botHarness) stop() {
	if h.run == nil {
		return
	}
	_ = h.run.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-h.run.done:
		if err != nil {
			h.t.Errorf("bot exited with %v; output:\n%s", err, h.out.String())
		}
	case <-time.After(30 * time.Second):
		_ = h.run.cmd.Process.Kill()
		h.t.Errorf("bot did not stop within 30 s of SIGTERM")
	}
	h.run = nil
}

// tgUser is a Telegram user talking to the bot in one chat.
type tgUser struct {
	h        *botHarness
	id       int64
	chat     int64
	chatType string
	name     string
}

func (h *botHarness) user(id int64, name string) *tgUser {
	return &tgUser{h: h, id: id, chat: id, chatType: "private", name: name}
}

func (u *tgUser) from() map[string]any {
	return map[string]any{"id": u.id, "is_bot": false, "first_name": u.name, "language_code": "en"}
}

func (u *tgUser) chatObj() map[string]any {
	c := map[string]any{"id": u.chat, "type": u.chatType}
	if u.chatType == "private" {
		c["first_name"] = u.name
	} else {
		c["title"] = "Some group"
	}
	return c
}

var msgSeq = 10

func (u *tgUser) messageUpdate(text string) map[string]any {
	msgSeq++
	m := map[string]any{"message_id": msgSeq, "date": time.Now().Unix(), "chat": u.chatObj(), "from": u.from(), "text": text}
	if strings.HasPrefix(text, "/") {
		cmd, _, _ := strings.Cut(text, " ")
		m["entities"] = []any{map[string]any{"type": "bot_command", "offset": 0, "length": len(cmd)}}
	}
	return map[string]any{"message": m}
}

// say sends a message and returns the bot's next message to this chat.
func (u *tgUser) say(text string) tgCall {
	u.h.t.Helper()
	m := u.h.tg.mark()
	u.h.tg.push(u.messageUpdate(text))
	return u.h.tg.waitCall(m, "sendMessage", u.toMe)
}

func (u *tgUser) toMe(c tgCall) bool {
	return c.Fields["chat_id"] == fmt.Sprint(u.chat) && c.ErrorCode == 0
}

var cbSeq = 0

func (u *tgUser) callbackUpdate(msgID int, data string) (map[string]any, string) {
	cbSeq++
	id := fmt.Sprintf("cbq-%d", cbSeq)
	return map[string]any{"callback_query": map[string]any{
		"id": id, "from": u.from(), "chat_instance": "42", "data": data,
		"message": map[string]any{"message_id": msgID, "date": time.Now().Unix(), "chat": u.chatObj(), "text": "…"},
	}}, id
}

// press presses a button and returns the callback's answer text.
func (u *tgUser) press(msgID int, data string) string {
	u.h.t.Helper()
	upd, id := u.callbackUpdate(msgID, data)
	m := u.h.tg.mark()
	u.h.tg.push(upd)
	return u.h.tg.waitCall(m, "answerCallbackQuery", func(c tgCall) bool { return c.Fields["callback_query_id"] == id }).Fields["text"]
}

// buttons are the callback_data of a message's inline keyboard, by button text.
func buttons(t testing.TB, c tgCall) map[string]string {
	t.Helper()
	out := map[string]string{}
	if c.Fields["reply_markup"] == "" {
		return out
	}
	var kb struct {
		InlineKeyboard [][]struct {
			Text         string `json:"text"`
			CallbackData string `json:"callback_data"`
		} `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(c.Fields["reply_markup"]), &kb); err != nil {
		t.Fatalf("reply_markup %q: %v", c.Fields["reply_markup"], err)
	}
	for _, row := range kb.InlineKeyboard {
		for _, b := range row {
			out[b.Text] = b.CallbackData
		}
	}
	return out
}

func mustContain(t testing.TB, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Fatalf("%s does not contain %q:\n%s", what, sub, s)
		}
	}
}

// botCatalog is served by the gateway's built-in simulator, so keys made by the bot can be used.
const botCatalog = `{
  "currency": "RUB",
  "families": [{"id": "f"}],
  "providers": [{"id": "sim", "kind": "simulator"}],
  "models": [
    {"id": "b-model", "display_name": "B", "family": "f",
     "routes": [{"endpoint_families": ["chat.completions", "messages"], "provider": "sim"}],
     "prices": [{"endpoint_families": ["chat.completions", "messages"], "billing_mode": "per_token", "input": "1", "output": "1000"}]},
    {"id": "c-model", "display_name": "C", "family": "f",
     "routes": [{"endpoint_families": ["chat.completions"], "provider": "sim"}],
     "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "2", "output": "3"}]}
  ]
}`

var secretPattern = regexp.MustCompile(`<code>([^<]{20,})</code>`)

func profileByRef(e *gatewaytest.Gateway, ref string) map[string]any {
	_, _, p := e.Do("GET", "/admin/v1/profiles:lookup?external_ref="+ref, gatewaytest.Bearer(gatewaytest.AdminToken), "")
	return p
}

func keysOf(e *gatewaytest.Gateway, pid string) []map[string]any {
	out := e.Admin("GET", "/admin/v1/profiles/"+pid+"/keys", "")
	var ks []map[string]any
	for _, k := range out["keys"].([]any) {
		ks = append(ks, k.(map[string]any))
	}
	return ks
}

func TestMain(m *testing.M) { gatewaytest.Main(m) }

func TestBotKeysPaymentsAndOperators(t *testing.T) {
	t.Parallel()
	e := gatewaytest.Start(t, gatewaytest.Options{})
	e.Admin("POST", "/admin/v1/catalog:apply", botCatalog)
	h := newBotHarness(t, e.GRPCAddr, "GATEWAY_BOT_OPERATORS=777", "TELEGRAM_PAYMENT_PROVIDER_TOKEN=prov-token", "GATEWAY_BOT_SECRET_TTL=2s")
	h.start()
	ann, bob, op := h.user(101, "Ann"), h.user(202, "Bob"), h.user(777, "Op")
	var secrets []string

	// In a group the bot says to write privately and does nothing else.
	group := &tgUser{h: h, id: 303, chat: -100500, chatType: "supergroup", name: "Gus"}
	r := group.say("/newkey leaked")
	mustContain(t, "group reply", r.Fields["text"], "private chat")
	if len(buttons(t, r)) != 0 {
		t.Fatalf("group reply has buttons: %v", r.Fields["reply_markup"])
	}
	if ans := group.press(1, "s:1:ok"); !strings.Contains(ans, "private chat") {
		t.Fatalf("group callback answered %q", ans)
	}
	if p := profileByRef(e, "tg:303"); p["id"] != nil {
		t.Fatalf("a group message created a profile: %v", p)
	}

	// /start creates the profile; /help has the base URLs and the warning.
	r = ann.say("/start")
	mustContain(t, "/start", r.Fields["text"], "Welcome", "0 RUB")
	pid, _ := profileByRef(e, "tg:101")["id"].(string)
	if pid == "" {
		t.Fatal("/start made no profile tg:101")
	}
	r = ann.say("/help")
	mustContain(t, "/help", r.Fields["text"], "https://gw.example/v1", "https://gw.example/v1beta", "not end-to-end encrypted", "/newkey", "/topup")
	if strings.Contains(r.Fields["text"], "/credit") {
		t.Fatal("/help shows operator commands to a user")
	}

	// /newkey: endpoint families, then models, then confirm.
	r = ann.say("/newkey laptop")
	if r.Fields["parse_mode"] != "HTML" || r.ContentType != "multipart/form-data" {
		t.Fatalf("sendMessage: parse_mode %q, content type %q", r.Fields["parse_mode"], r.ContentType)
	}
	kbMsg := r.MessageID
	bs := buttons(t, r)
	mustContain(t, "endpoint keyboard", r.Fields["reply_markup"], "✅ chat.completions", "✅ messages", "all, including future ones")
	ann.press(kbMsg, bs["✅ all, including future ones"]) // none
	if ans := ann.press(kbMsg, bs["Next ›"]); !strings.Contains(ans, "at least one") {
		t.Fatalf("next with nothing chosen answered %q", ans)
	}
	ann.press(kbMsg, bs["✅ chat.completions"]) // the data toggles by index whatever the label
	m := h.tg.mark()
	ann.press(kbMsg, bs["Next ›"])
	ed := h.tg.waitCall(m, "editMessageText", nil)
	bs = buttons(t, ed)
	mustContain(t, "model keyboard", ed.Fields["text"], "which models")
	ann.press(kbMsg, bs["✅ all, including future ones"])
	ann.press(kbMsg, bs["✅ b-model"]) // labels are those of the keyboard when it was sent
	m = h.tg.mark()
	ann.press(kbMsg, bs["Next ›"])
	ed = h.tg.waitCall(m, "editMessageText", nil)
	mustContain(t, "confirmation", ed.Fields["text"], "Endpoints: chat.completions", "Models: b-model")
	createData := buttons(t, ed)["✅ Create key"]

	// Another user can neither confirm nor cancel Ann's session.
	bob.say("/start")
	if ans := bob.press(kbMsg, createData); ans != "That is not one of your keys." {
		t.Fatalf("Bob's press on Ann's session answered %q", ans)
	}
	if n := len(keysOf(e, pid)); n != 0 {
		t.Fatalf("%d keys after someone else's press", n)
	}

	// A restart in the middle of the creation keeps the session.
	h.stop()
	h.start()
	m = h.tg.mark()
	if ans := ann.press(kbMsg, createData); ans != "Key created." {
		t.Fatalf("create answered %q", ans)
	}
	sec := h.tg.waitCall(m, "sendMessage", func(c tgCall) bool { return c.Fields["protect_content"] == "true" })
	mustContain(t, "secret message", sec.Fields["text"], "export OPENAI_BASE_URL=https://gw.example/v1\n", "export ANTHROPIC_BASE_URL=https://gw.example\n",
		"GOOGLE_GEMINI_BASE_URL=https://gw.example", "not end-to-end encrypted")
	found := secretPattern.FindStringSubmatch(sec.Fields["text"])
	if found == nil {
		t.Fatalf("no secret in a code element: %s", sec.Fields["text"])
	}
	secret := found[1]
	secrets = append(secrets, secret)
	ks := keysOf(e, pid)
	if len(ks) != 1 || fmt.Sprint(ks[0]["allowed_endpoints"]) != "[chat.completions]" || fmt.Sprint(ks[0]["allowed_models"]) != "[b-model]" || ks[0]["name"] != "laptop" {
		t.Fatalf("keys after create: %v", ks)
	}
	keyID := ks[0]["id"].(string)
	if _, _, list := e.Do("GET", "/v1/models", gatewaytest.Bearer(secret), ""); fmt.Sprint(gatewaytest.IDs(t, list, "data", "id")) != "[b-model]" {
		t.Fatalf("the new key sees %v", list)
	}

	// The same confirmation again, as a new press and as the same update redelivered, mints
	// nothing.
	if ans := ann.press(kbMsg, createData); ans != "This request was already handled or has expired." {
		t.Fatalf("second create answered %q", ans)
	}
	upd, _ := ann.callbackUpdate(kbMsg, createData)
	lastID := h.tg.push(upd)
	ann.say("/balance") // handled after the update above
	m = h.tg.mark()
	h.tg.redeliver(lastID, upd)
	ann.say("/balance")
	if got := h.tg.callsSince(m, "answerCallbackQuery"); len(got) != 0 {
		t.Fatalf("a redelivered update was handled again: %v", got)
	}
	if n := len(keysOf(e, pid)); n != 1 {
		t.Fatalf("%d keys after replays, want 1", n)
	}

	// The secret message is deleted after the TTL, by a restarted bot too.
	h.stop()
	time.Sleep(2 * time.Second)
	m = h.tg.mark()
	h.start()
	h.tg.waitCall(m, "deleteMessage", func(c tgCall) bool { return c.MessageID == sec.MessageID })

	// /keys: no secret, buttons per key. The /balance answered just before the stop was
	// recorded as handled, stop or not: the restarted bot does not answer it again.
	r = ann.say("/keys")
	mustContain(t, "/keys", r.Fields["text"], "laptop", ks[0]["prefix"].(string), "ACTIVE", "chat.completions", "b-model")
	for _, c := range h.tg.callsSince(m, "sendMessage") {
		if strings.Contains(c.Fields["text"], "Available now") {
			t.Fatalf("the restarted bot answered a /balance handled before the stop: %s", c.Fields["text"])
		}
	}
	if strings.Contains(r.Fields["text"], secret) {
		t.Fatal("/keys shows the secret")
	}
	bs = buttons(t, r)
	if bs["Models · laptop"] != "k:m:"+keyID {
		t.Fatalf("/keys buttons: %v", bs)
	}
	// Change the models to all through the buttons (UpdateKey).
	m = h.tg.mark()
	ann.press(r.MessageID, bs["Models · laptop"])
	edit := h.tg.waitCall(m, "sendMessage", ann.toMe)
	ebs := buttons(t, edit)
	ann.press(edit.MessageID, ebs["▫️ all, including future ones"])
	if ans := ann.press(edit.MessageID, ebs["Save"]); ans != "Saved." {
		t.Fatalf("save answered %q", ans)
	}
	if k := keysOf(e, pid)[0]; fmt.Sprint(k["allowed_models"]) != "[*]" || fmt.Sprint(k["allowed_endpoints"]) != "[chat.completions]" {
		t.Fatalf("key after the models edit: %v", k)
	}

	// Bob: Ann's key names and ids find nothing, forged callback data changes nothing.
	r = bob.say("/revoke laptop")
	mustContain(t, "Bob's /revoke", r.Fields["text"], "no active key")
	for _, data := range []string{"ky:r:" + keyID, "ky:o:" + keyID, "k:m:" + keyID} {
		if ans := bob.press(1, data); ans != "That is not one of your keys." {
			t.Fatalf("Bob's %s answered %q", data, ans)
		}
	}
	for data, want := range map[string]string{"s:../x:ok": "Unknown button.", "s:999999:ok": "This request was already handled or has expired.", "k:r": "Unknown button.", "": "Unknown button."} {
		if ans := bob.press(1, data); ans != want {
			t.Fatalf("made-up callback data %q answered %q, want %q", data, ans, want)
		}
	}
	if k := keysOf(e, pid); len(k) != 1 || k[0]["state"] != "ACTIVE" {
		t.Fatalf("Ann's keys after Bob: %v", k)
	}

	// /rotate with confirmation: a new secret once; a second press cannot rotate again.
	r = ann.say("/rotate laptop")
	yes := buttons(t, r)["Yes, rotate"]
	m = h.tg.mark()
	if ans := ann.press(r.MessageID, yes); ans != "Rotated." {
		t.Fatalf("rotate answered %q", ans)
	}
	sec2 := h.tg.waitCall(m, "sendMessage", func(c tgCall) bool { return c.Fields["protect_content"] == "true" })
	secrets = append(secrets, secretPattern.FindStringSubmatch(sec2.Fields["text"])[1])
	if ans := ann.press(r.MessageID, yes); ans != "That key is already revoked." {
		t.Fatalf("second rotate answered %q", ans)
	}
	ks = keysOf(e, pid)
	if len(ks) != 2 {
		t.Fatalf("keys after rotate: %v", ks)
	}
	var newKey map[string]any
	for _, k := range ks {
		if k["state"] == "ACTIVE" {
			newKey = k
		}
	}
	if newKey == nil || fmt.Sprint(newKey["allowed_models"]) != "[*]" {
		t.Fatalf("keys after rotate: %v", ks)
	}

	// Operator: credit by Telegram id (replay-safe), find.
	r = op.say("/credit 101 100")
	mustContain(t, "/credit", r.Fields["text"], "Credited 100", "Balance: <b>100 RUB</b>")
	r = ann.say("/credit 101 100")
	mustContain(t, "/credit by a user", r.Fields["text"], "Unknown command")
	r = op.say("/find 101")
	mustContain(t, "/find", r.Fields["text"], pid, "laptop", newKey["prefix"].(string), "100 RUB")

	// A request with the rotated key, then /usage and /models.
	status, _, _ := e.Do("POST", "/v1/chat/completions", gatewaytest.Bearer(secrets[1]), `{"model":"b-model","max_tokens":12,"messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 {
		t.Fatalf("chat completion with the bot's key: %d", status)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r = ann.say("/usage")
		if strings.Contains(r.Fields["text"], "b-model") || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	mustContain(t, "/usage", r.Fields["text"], "b-model", "last 7 days", "output 12", "RUB")
	r = ann.say("/models")
	mustContain(t, "/models", r.Fields["text"], "b-model", "c-model", "input 1 RUB per 1M tokens", "output 1000 RUB per 1M tokens")

	// /revoke by prefix.
	r = ann.say("/revoke " + newKey["prefix"].(string))
	if ans := ann.press(r.MessageID, buttons(t, r)["Yes, revoke"]); ans != "Revoked." {
		t.Fatalf("revoke answered %q", ans)
	}
	for _, k := range keysOf(e, pid) {
		if k["state"] != "REVOKED" {
			t.Fatalf("key %v not revoked", k)
		}
	}

	// Top-up: invoice, pre-checkout, payment credited once although delivered twice.
	m = h.tg.mark()
	ann.h.tg.push(ann.messageUpdate("/topup 150.50"))
	inv := h.tg.waitCall(m, "sendInvoice", nil)
	if inv.Fields["currency"] != "RUB" || inv.Fields["payload"] != "topup:"+pid || inv.Fields["provider_token"] != "prov-token" ||
		!strings.Contains(inv.Fields["prices"], `"amount":15050`) {
		t.Fatalf("invoice: %v", inv.Fields)
	}
	m = h.tg.mark()
	sent := time.Now()
	h.tg.push(map[string]any{"pre_checkout_query": map[string]any{"id": "pcq-1", "from": ann.from(), "currency": "RUB", "total_amount": 15050, "invoice_payload": "topup:" + pid}})
	pre := h.tg.waitCall(m, "answerPreCheckoutQuery", nil)
	if pre.Fields["ok"] != "true" || pre.Fields["pre_checkout_query_id"] != "pcq-1" || pre.At.Sub(sent) > 10*time.Second {
		t.Fatalf("pre-checkout answer %v after %v", pre.Fields, pre.At.Sub(sent))
	}
	// Someone else's invoice payload is declined.
	m = h.tg.mark()
	h.tg.push(map[string]any{"pre_checkout_query": map[string]any{"id": "pcq-2", "from": bob.from(), "currency": "RUB", "total_amount": 100, "invoice_payload": "topup:" + pid}})
	if pre = h.tg.waitCall(m, "answerPreCheckoutQuery", nil); pre.Fields["ok"] != "false" || pre.Fields["error_message"] == "" {
		t.Fatalf("foreign pre-checkout answer %v", pre.Fields)
	}
	before := profileByRef(e, "tg:101")["balance"].(string)
	paid := func() map[string]any {
		u := ann.messageUpdate("")
		msg := u["message"].(map[string]any)
		delete(msg, "text")
		msg["successful_payment"] = map[string]any{"currency": "RUB", "total_amount": 15050, "invoice_payload": "topup:" + pid,
			"telegram_payment_charge_id": "tg-charge-1", "provider_payment_charge_id": "prov-charge-1"}
		return u
	}
	m = h.tg.mark()
	payment := paid()
	payID := h.tg.push(payment)
	r = h.tg.waitCall(m, "sendMessage", ann.toMe)
	mustContain(t, "payment reply", r.Fields["text"], "Payment received: 150.5 RUB")
	after := profileByRef(e, "tg:101")["balance"].(string)
	m = h.tg.mark()
	h.tg.redeliver(payID, payment) // the same update again: skipped
	h.tg.push(paid())              // another message with the same charge: credited once
	h.tg.waitCall(m, "sendMessage", ann.toMe)
	ann.say("/balance")
	final := profileByRef(e, "tg:101")["balance"].(string)
	if d := decimal.RequireFromString(after).Sub(decimal.RequireFromString(before)); !d.Equal(decimal.RequireFromString("150.5")) || final != after {
		t.Fatalf("balance %s before the payment, %s after (credited %s, want 150.5), %s after the redelivery", before, after, d, final)
	}

	// Per-user limit on top-ups: five invoices per ten minutes.
	for range 4 {
		ann.h.tg.push(ann.messageUpdate("/topup 1"))
	}
	r = ann.say("/topup 1")
	mustContain(t, "sixth top-up", r.Fields["text"], "Too many")

	// The log: update ids and outcomes, never the token, a secret, text or callback data.
	h.stop()
	logs := h.out.String()
	mustContain(t, "bot log", logs, `"update_id"`, `"outcome":"key_created"`, `"command":"newkey"`, `"outcome":"replay_skipped"`, `"outcome":"credited"`)
	for _, bad := range append(secrets, botToken, "TEST-bot-token", "laptop", "ky:o:", createData, "prov-token", "150.50") {
		if strings.Contains(logs, bad) {
			t.Fatalf("the bot's log contains %q:\n%s", bad, logs)
		}
	}
}

func TestBotGatewayDownTelegramErrorsAndHealth(t *testing.T) {
	t.Parallel()
	dbURL := storetest.DatabaseURL(t)
	first := gatewaytest.Start(t, gatewaytest.Options{Name: "first", DatabaseURL: dbURL, Env: []string{"GATEWAY_DRAIN_TIMEOUT=5s"}})
	e := first
	e.Admin("POST", "/admin/v1/catalog:apply", botCatalog)
	if hl := e.Admin("GET", "/admin/v1/bot/health", ""); hl["status"] != "no_data" {
		t.Fatalf("health before any report: %v", hl)
	}
	h := newBotHarness(t, first.GRPCAddr)
	h.start()
	ann := h.user(101, "Ann")

	// Health: the first successful poll is reported.
	deadline := time.Now().Add(20 * time.Second)
	for hl := e.Admin("GET", "/admin/v1/bot/health", ""); hl["status"] != "operational" || hl["last_poll_time"] == nil; hl = e.Admin("GET", "/admin/v1/bot/health", "") {
		if time.Now().After(deadline) {
			t.Fatalf("health while polling: %v", hl)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Without a payment provider token /topup explains instead of invoicing.
	m := h.tg.mark()
	r := ann.say("/topup 10")
	mustContain(t, "/topup without payments", r.Fields["text"], "not enabled", "<code>101</code>")
	if inv := h.tg.callsSince(m, "sendInvoice"); len(inv) != 0 {
		t.Fatalf("invoice sent without a provider token: %v", inv)
	}

	// 429 on sendMessage: the reply comes after retry_after.
	h.tg.failNext("sendMessage", 429, 1)
	m = h.tg.mark()
	r = ann.say("/balance")
	sends := h.tg.callsSince(m, "sendMessage")
	if len(sends) != 2 || sends[0].ErrorCode != 429 || sends[1].ErrorCode != 0 || sends[1].At.Sub(sends[0].At) < time.Second {
		t.Fatalf("sendMessage calls around a 429: %+v", sends)
	}
	mustContain(t, "/balance", r.Fields["text"], "Balance: <b>0 RUB</b>", "Available now")

	// 429 on getUpdates: the next poll waits retry_after.
	h.tg.failNext("getUpdates", 429, 2)
	m = h.tg.mark()
	var polls []tgCall
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if polls = h.tg.callsSince(m, "getUpdates"); len(polls) >= 2 && polls[0].ErrorCode == 429 || len(polls) >= 3 {
			break
		}
	}
	for i, p := range polls {
		if p.ErrorCode == 429 {
			if i+1 >= len(polls) || polls[i+1].At.Sub(p.At) < 2*time.Second {
				t.Fatalf("getUpdates after a 429 with retry_after 2: %+v", polls)
			}
			break
		}
	}

	// 403 (the user blocked the bot): not retried, the bot goes on with the next update.
	h.tg.failNext("sendMessage", 403, 0)
	m = h.tg.mark()
	h.tg.push(ann.messageUpdate("/balance"))
	helpID := h.tg.push(ann.messageUpdate("/help"))
	r = h.tg.waitCall(m, "sendMessage", ann.toMe)
	mustContain(t, "/help after a 403", r.Fields["text"], "Commands")
	if sends := h.tg.callsSince(m, "sendMessage"); len(sends) != 2 || sends[0].ErrorCode != 403 {
		t.Fatalf("sendMessage calls around a 403: %+v", sends)
	}

	// The gateway goes away: the user is told to try again, the update is kept and carried
	// out when a gateway answers on the same address again.
	addr := first.GRPCAddr
	h.tg.waitConfirmed(helpID)
	if err := first.Term(t, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	m = h.tg.mark()
	h.tg.push(ann.messageUpdate("/start"))
	notice := h.tg.waitCall(m, "sendMessage", ann.toMe)
	mustContain(t, "unreachable notice", notice.Fields["text"], "cannot be reached", "try again")
	time.Sleep(time.Second) // a few retries against nothing
	second := gatewaytest.Start(t, gatewaytest.Options{Name: "second", DatabaseURL: dbURL, Env: []string{"GATEWAY_GRPC_ADDR=" + addr}})
	e = second
	welcome := h.tg.waitCall(m, "sendMessage", func(c tgCall) bool { return strings.Contains(c.Fields["text"], "Welcome") })
	if welcome.At.Before(notice.At) {
		t.Fatal("welcome before the notice")
	}
	r = ann.say("/balance")
	if got := h.tg.callsSince(m, "sendMessage"); len(got) != 3 {
		t.Fatalf("messages around the outage: %v", h.tg.methodsSince(m))
	}

	// Health: operational while reports arrive, major_outage when the last is over 2 minutes old.
	h.stop()
	if _, err := second.Pool().Exec(context.Background(), `UPDATE bot_health SET last_report_time = now() - interval '121 seconds'`); err != nil {
		t.Fatal(err)
	}
	if hl := e.Admin("GET", "/admin/v1/bot/health", ""); hl["status"] != "major_outage" || hl["last_report_time"] == nil {
		t.Fatalf("health after 2 minutes without a report: %v", hl)
	}
	h.start()
	deadline = time.Now().Add(20 * time.Second)
	for hl := e.Admin("GET", "/admin/v1/bot/health", ""); hl["status"] != "operational"; hl = e.Admin("GET", "/admin/v1/bot/health", "") {
		if time.Now().After(deadline) {
			t.Fatalf("health after the bot came back: %v", hl)
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.stop()
	if logs := h.out.String(); strings.Contains(logs, botToken) || !strings.Contains(logs, `"outcome":"gateway_unavailable"`) {
		t.Fatalf("bot log:\n%s", logs)
	}
}

// The bot state RPCs over their HTTP mapping: put-if-absent, take-once, expiry, listing.
func TestBotStateAdminAPI(t *testing.T) {
	t.Parallel()
	e := gatewaytest.Start(t, gatewaytest.Options{})
	put := func(key, body string) map[string]any { return e.Admin("POST", "/admin/v1/bot/state/"+key+":put", body) }
	if r := put("s.1", `{"value":"one","only_if_absent":true}`); r["created"] != true || r["state"].(map[string]any)["value"] != "one" {
		t.Fatalf("first put: %v", r)
	}
	if r := put("s.1", `{"value":"two","only_if_absent":true}`); r["created"] == true || r["state"].(map[string]any)["value"] != "one" {
		t.Fatalf("put if absent over a value: %v", r)
	}
	put("s.2", `{"value":"x"}`)
	put("s.3", `{"value":"old","expire_time":"2020-01-01T00:00:00Z"}`)
	put("t.1", `{"value":"other"}`)
	list := e.Admin("GET", "/admin/v1/bot/state?prefix=s.", "")
	if got := gatewaytest.IDs(t, list, "states", "key"); fmt.Sprint(got) != "[s.1 s.2]" {
		t.Fatalf("listed %v", got)
	}
	if r := e.Admin("POST", "/admin/v1/bot/state/s.1:take", `{}`); r["value"] != "one" {
		t.Fatalf("take: %v", r)
	}
	for _, k := range []string{"s.1", "s.3"} {
		status, _, body := e.Do("POST", "/admin/v1/bot/state/"+k+":take", gatewaytest.Bearer(gatewaytest.AdminToken), `{}`)
		if status != 404 || body["error"].(map[string]any)["code"] != "not_found" {
			t.Fatalf("take %s after take or expiry: %d %v", k, status, body)
		}
	}
	if status, _, _ := e.Do("GET", "/admin/v1/bot/state/s.2", nil, ""); status != 401 {
		t.Fatalf("bot state without the admin token: %d", status)
	}
	if status, _, body := e.Do("POST", "/admin/v1/bot/state/bad%20key:put", gatewaytest.Bearer(gatewaytest.AdminToken), `{"value":"v"}`); status != 400 {
		t.Fatalf("bad key: %d %v", status, body)
	}
	if r := e.Admin("POST", "/admin/v1/bot/health:report", `{"last_poll_time":"2026-01-01T00:00:00Z"}`); r["status"] != "operational" || r["last_poll_time"] != "2026-01-01T00:00:00Z" {
		t.Fatalf("report: %v", r)
	}
}

// With GATEWAY_BOT_WEBHOOK_URL the bot sets a webhook and takes updates from Telegram's
// POSTs: only with the secret token, each update once.
func TestBotWebhook(t *testing.T) {
	t.Parallel()
	e := gatewaytest.Start(t, gatewaytest.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	hookURL := "http://" + addr + "/tg/hook"
	h := newBotHarness(t, e.GRPCAddr, "GATEWAY_BOT_WEBHOOK_URL="+hookURL, "GATEWAY_BOT_WEBHOOK_ADDR="+addr)
	m := h.tg.mark()
	h.start()
	set := h.tg.waitCall(m, "setWebhook", nil)
	if set.Fields["url"] != hookURL || len(set.Fields["secret_token"]) < 32 || set.Fields["max_connections"] != "1" {
		t.Fatalf("setWebhook: %v", set.Fields)
	}
	ann := h.user(101, "Ann")
	if code := h.tg.deliver(0, ann.messageUpdate("/start"), "wrong-secret"); code != 403 {
		t.Fatalf("delivery with a wrong secret: %d", code)
	}
	upd := ann.messageUpdate("/start")
	m = h.tg.mark()
	var id int64 = 9000
	if code := h.tg.deliver(id, upd, ""); code != 200 {
		t.Fatalf("delivery: %d", code)
	}
	mustContain(t, "/start by webhook", h.tg.waitCall(m, "sendMessage", ann.toMe).Fields["text"], "Welcome")
	if code := h.tg.deliver(id, upd, ""); code != 200 {
		t.Fatalf("redelivery: %d", code)
	}
	if got := h.tg.callsSince(m, "sendMessage"); len(got) != 1 {
		t.Fatalf("a redelivered update was answered again: %v", h.tg.methodsSince(m))
	}
	if profileByRef(e, "tg:101")["id"] == nil {
		t.Fatal("no profile after /start by webhook")
	}
	deadline := time.Now().Add(20 * time.Second)
	for hl := e.Admin("GET", "/admin/v1/bot/health", ""); hl["status"] != "operational"; hl = e.Admin("GET", "/admin/v1/bot/health", "") {
		if time.Now().After(deadline) {
			t.Fatalf("health with a working webhook: %v", hl)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Configuration that retrying cannot fix stops the bot with a message naming the variable
// (never its value).
func TestBotRefusesToStartMisconfigured(t *testing.T) {
	t.Parallel()
	e := gatewaytest.Start(t, gatewaytest.Options{})
	tg := newFakeTelegram(t, botToken)
	base := []string{"PATH=" + os.Getenv("PATH"), "TELEGRAM_API_URL=" + tg.URL(), "GATEWAY_ADMIN_ADDR=" + e.GRPCAddr, "GATEWAY_BOT_POLL_TIMEOUT=1s"}
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"without a bot token", []string{"GATEWAY_ADMIN_TOKEN=" + gatewaytest.AdminToken}, "TELEGRAM_BOT_TOKEN is not set"},
		{"with a wrong admin token", []string{"TELEGRAM_BOT_TOKEN=" + botToken, "GATEWAY_ADMIN_TOKEN=wrong-admin-token"}, "the gateway rejects GATEWAY_ADMIN_TOKEN"},
		{"with malformed key limits", []string{"TELEGRAM_BOT_TOKEN=" + botToken, "GATEWAY_ADMIN_TOKEN=" + gatewaytest.AdminToken, "GATEWAY_BOT_KEY_LIMITS=max_rps=5"}, `GATEWAY_BOT_KEY_LIMITS: unknown limit "max_rps"`},
		{"with a Stars rate of zero", []string{"TELEGRAM_BOT_TOKEN=" + botToken, "GATEWAY_ADMIN_TOKEN=" + gatewaytest.AdminToken, "GATEWAY_BOT_STARS_RATE=0"}, `GATEWAY_BOT_STARS_RATE: "0" is not a positive decimal`},
		{"with a bot token Telegram rejects", []string{"TELEGRAM_BOT_TOKEN=999:WRONG-bot-token", "GATEWAY_ADMIN_TOKEN=" + gatewaytest.AdminToken}, "Telegram rejects TELEGRAM_BOT_TOKEN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(gatewaytest.Binary(t), "bot")
			cmd.Env = append(append([]string{}, base...), tc.env...)
			buf := &gatewaytest.SyncBuffer{}
			cmd.Stdout, cmd.Stderr = buf, buf
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(60 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("the bot kept running:\n%s", buf.String())
			}
			out := []byte(buf.String())
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), tc.want) {
				t.Fatalf("exit %v, output:\n%s", err, out)
			}
			for _, secret := range []string{"wrong-admin-token", "WRONG-bot-token", botToken} {
				if strings.Contains(string(out), secret) {
					t.Fatalf("the output names a token:\n%s", out)
				}
			}
		})
	}
}
