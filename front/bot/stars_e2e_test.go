package bot_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// Telegram Stars (issue 36): with GATEWAY_BOT_STARS_RATE the bot invoices top-ups in XTR
// without a provider token, whatever TELEGRAM_PAYMENT_PROVIDER_TOKEN says.

// starsRate is the test's rate: 1.3 RUB per star does not divide most amounts, so the
// rounding up shows.
const starsRate = "1.3"

// starsPaymentUpdate is a successful_payment in Stars as Telegram sends it: currency XTR,
// total_amount in whole stars, the invoice's payload, no provider charge id.
func (u *tgUser) starsPaymentUpdate(payload, charge string, stars int) map[string]any {
	up := u.messageUpdate("")
	msg := up["message"].(map[string]any)
	delete(msg, "text")
	msg["successful_payment"] = map[string]any{"currency": "XTR", "total_amount": stars, "invoice_payload": payload,
		"telegram_payment_charge_id": charge, "provider_payment_charge_id": ""}
	return up
}

func preCheckout(id string, u *tgUser, currency string, amount int, payload string) map[string]any {
	return map[string]any{"pre_checkout_query": map[string]any{"id": id, "from": u.from(), "currency": currency, "total_amount": amount, "invoice_payload": payload}}
}

// invoicePrice is the one price item of an invoice.
func invoicePrice(t *testing.T, c tgCall) int {
	t.Helper()
	var prices []struct {
		Label  string `json:"label"`
		Amount int    `json:"amount"`
	}
	if err := json.Unmarshal([]byte(c.Fields["prices"]), &prices); err != nil || len(prices) != 1 {
		t.Fatalf("prices %q: %v (want exactly one item)", c.Fields["prices"], err)
	}
	return prices[0].Amount
}

// The Stars invoice: XTR, no provider token, one price in whole stars rounded up (an amount
// the rate divides is not rounded); amounts out of bounds refused; pre-checkout approves the
// invoice and declines one of another rate or a fiat one; the payment credits stars × rate
// once, also when delivered again and when update ids go backwards.
func TestBotStarsTopUpInvoicePreCheckoutAndPayment(t *testing.T) {
	t.Parallel()
	m := newBotMoney(t, "GATEWAY_BOT_STARS_RATE="+starsRate)
	h := m.h
	h.start()
	ann := h.user(101, "Ann")
	ann.say("/start")
	pid := profileByRef(m.e, "tg:101")["id"].(string)

	for _, tc := range []struct {
		amount string
		stars  int
		credit string
	}{
		{"100", 77, "100.1"}, // 100 / 1.3 = 76.92…: 77 stars, never 76 (which would credit 98.8)
		{"130", 100, "130"},  // divides evenly: exactly 100 stars, not 101
		{"1", 1, "1.3"},
		{"0.5", 0, ""},   // below the minimum
		{"13001", 0, ""}, // above 10000 stars
		{"12.345", 0, ""},
	} {
		mark := h.tg.mark()
		h.tg.push(ann.messageUpdate("/topup " + tc.amount))
		if tc.stars == 0 {
			mustContain(t, "/topup "+tc.amount, h.tg.waitCall(mark, "sendMessage", ann.toMe).Fields["text"], "Usage: /topup", "from 1 to 13000 RUB")
			if n := len(h.tg.callsSince(mark, "sendInvoice")); n != 0 {
				t.Fatalf("/topup %s sent %d invoices", tc.amount, n)
			}
			continue
		}
		inv := h.tg.waitCall(mark, "sendInvoice", nil)
		if _, has := inv.Fields["provider_token"]; has || inv.Fields["currency"] != "XTR" || inv.Fields["payload"] != "topup:"+pid+":xtr:1.3" {
			t.Fatalf("/topup %s: invoice %v; want XTR, no provider_token, the Stars payload", tc.amount, inv.Fields)
		}
		if got := invoicePrice(t, inv); got != tc.stars {
			t.Fatalf("/topup %s: %d stars, want %d", tc.amount, got, tc.stars)
		}
		mustContain(t, "invoice description", inv.Fields["description"], tc.credit+" RUB")
	}

	payload := "topup:" + pid + ":xtr:1.3"
	for _, tc := range []struct {
		name     string
		currency string
		amount   int
		payload  string
		ok       bool
	}{
		{"the invoice", "XTR", 77, payload, true},
		{"an earlier rate", "XTR", 50, "topup:" + pid + ":xtr:2", false},
		{"a fiat invoice while Stars are on", "RUB", 15050, "topup:" + pid, false},
		{"someone else's", "XTR", 77, "topup:00000000-0000-0000-0000-000000000001:xtr:1.3", false},
	} {
		mark := h.tg.mark()
		h.tg.push(preCheckout("pcq-"+tc.name, ann, tc.currency, tc.amount, tc.payload))
		pre := h.tg.waitCall(mark, "answerPreCheckoutQuery", nil)
		if (pre.Fields["ok"] == "true") != tc.ok || (!tc.ok && pre.Fields["error_message"] == "") {
			t.Fatalf("pre-checkout of %s: %v, want ok=%v", tc.name, pre.Fields, tc.ok)
		}
	}

	// Paid: 77 stars at 1.3 credit 100.1 RUB, once.
	mark := h.tg.mark()
	upd := ann.starsPaymentUpdate(payload, "stars-charge-1", 77)
	id := h.tg.push(upd)
	mustContain(t, "payment reply", h.tg.waitCall(mark, "sendMessage", ann.toMe).Fields["text"], "Payment received: 100.1 RUB")
	h.tg.waitConfirmed(id)
	if got := m.credits(t, pid, "tg-payment:stars-charge-1"); len(got) != 1 || !got[0].Equal(decimal.RequireFromString("100.1")) {
		t.Fatalf("ledger entries of the charge: %v, want one of 100.1", got)
	}
	if st := m.paymentState("stars-charge-1"); !strings.Contains(st, `"stars":77`) || !strings.Contains(st, `"rate":"1.3"`) || !strings.Contains(st, `"currency":"RUB"`) {
		t.Fatalf("payment record: %s", st)
	}
	// Delivered again under its id, then after a renumbering under a lower one, and a new
	// message with the same charge id: nothing more is credited, and later commands work.
	h.tg.redeliver(id, upd)
	h.tg.renumber(3)
	h.tg.push(upd)
	h.tg.push(ann.starsPaymentUpdate(payload, "stars-charge-1", 77))
	mustContain(t, "/balance after the redeliveries", ann.say("/balance").Fields["text"], "Balance: <b>100.1 RUB</b>")
	if got := m.credits(t, pid, "tg-payment:stars-charge-1"); len(got) != 1 {
		t.Fatalf("ledger entries of a payment delivered four times: %v", got)
	}
	if b := m.balance(t, pid); !b.Equal(decimal.RequireFromString("100.1")) {
		t.Fatalf("balance %s, want 100.1", b)
	}
	h.stop()
	mustContain(t, "bot log", h.out.String(), `"stars":true`)
}

// payStars pays a Stars invoice of the user at the test's rate and waits for the credit.
func (m *botMoney) payStars(t *testing.T, u *tgUser, pid, charge string, stars int) {
	t.Helper()
	mark := m.h.tg.mark()
	id := m.h.tg.push(u.starsPaymentUpdate("topup:"+pid+":xtr:"+starsRate, charge, stars))
	mustContain(t, "payment reply", m.h.tg.waitCall(mark, "sendMessage", u.toMe).Fields["text"], "Payment received")
	m.h.tg.waitConfirmed(id)
}

// /refund: the profile is debited first, then refundStarPayment is called; a balance that no
// longer covers the payment refuses the refund with nothing moved; a second /refund changes
// nothing and says so; a refund Telegram refuses is credited back and may be tried again; a
// refund whose answer was lost is asked again, and Telegram's "already refunded" ends it with
// one debit.
func TestBotStarsRefund(t *testing.T) {
	t.Parallel()
	m := newBotMoney(t, "GATEWAY_BOT_STARS_RATE="+starsRate)
	h := m.h
	h.start()
	ann, op := h.user(101, "Ann"), h.user(777, "Op")
	ann.say("/start")
	pid := profileByRef(m.e, "tg:101")["id"].(string)
	m.payStars(t, ann, pid, "ch-a", 77) // 100.1
	m.payStars(t, ann, pid, "ch-b", 10) // 13
	bal := func(want string) {
		t.Helper()
		if b := m.balance(t, pid); !b.Equal(decimal.RequireFromString(want)) {
			t.Fatalf("balance %s, want %s", b, want)
		}
	}
	bal("113.1")

	// Only operators may refund; unknown charges and usage are answered.
	mustContain(t, "/refund by a user", ann.say("/refund ch-a").Fields["text"], "Unknown command")
	mustContain(t, "/refund without a charge", op.say("/refund").Fields["text"], "Usage: /refund")
	mustContain(t, "/refund of no payment", op.say("/refund nosuch").Fields["text"], "No payment with that charge id")

	// Ann spent most of it: the refund of ch-a (100.1) is refused, nothing moves.
	op.say("/credit 101 -60")
	bal("53.1")
	mark := h.tg.mark()
	mustContain(t, "refused refund", op.say("/refund ch-a").Fields["text"], "Refused", "no longer covers", "100.1 RUB", "53.1 RUB", "Nothing was debited or refunded")
	if n := len(h.tg.callsSince(mark, "refundStarPayment")); n != 0 {
		t.Fatalf("%d refundStarPayment calls for a refused refund", n)
	}
	bal("53.1")
	if st := m.paymentState("ch-a"); !strings.Contains(st, `"state":"credited"`) {
		t.Fatalf("record after a refused refund: %s", st)
	}

	// Covered again: debit, then refundStarPayment to the payer.
	op.say("/credit 101 60")
	mark = h.tg.mark()
	mustContain(t, "refund", op.say("/refund ch-a").Fields["text"], "Refunded 77 ⭐ to <code>101</code>", "debited 100.1 RUB")
	calls := h.tg.callsSince(mark, "refundStarPayment")
	if len(calls) != 1 || calls[0].Fields["user_id"] != "101" || calls[0].Fields["telegram_payment_charge_id"] != "ch-a" {
		t.Fatalf("refundStarPayment calls: %v", calls)
	}
	var debited bool
	for _, c := range m.faults.callsOf("CreditProfile") {
		debited = debited || c.Forwarded && c.At.Before(calls[0].At) && c.At.After(mark0(h, mark))
	}
	if got := m.credits(t, pid, "tg-refund:ch-a:0"); len(got) != 1 || !got[0].Equal(decimal.RequireFromString("-100.1")) || !debited {
		t.Fatalf("refund debit entries %v (debited before the refund call: %v), want one of -100.1 first", got, debited)
	}
	bal("13")

	// Again: nothing changes, and the operator is told.
	mark = h.tg.mark()
	mustContain(t, "second refund", op.say("/refund ch-a").Fields["text"], "already refunded", "nothing changed")
	if n := len(h.tg.callsSince(mark, "refundStarPayment")); n != 0 {
		t.Fatalf("a second /refund called refundStarPayment %d times", n)
	}
	bal("13")

	// Telegram refuses the refund of ch-b: the debit is credited back; a new /refund goes through.
	h.tg.failNext("refundStarPayment", 400, 0)
	mustContain(t, "refund refused by Telegram", op.say("/refund ch-b").Fields["text"], "did not go through", "credited back")
	bal("13")
	if st := m.paymentState("ch-b"); !strings.Contains(st, `"state":"credited"`) || !strings.Contains(st, `"refund_try":1`) {
		t.Fatalf("record after a refund refused by Telegram: %s", st)
	}
	if d, back := m.credits(t, pid, "tg-refund:ch-b:0"), m.credits(t, pid, "tg-refund-back:ch-b:0"); len(d) != 1 || len(back) != 1 || !d[0].Neg().Equal(back[0]) {
		t.Fatalf("debit %v and credit back %v of the refused refund", d, back)
	}
	// This time the answer is lost after Telegram refunded: asked again, Telegram says it
	// was refunded already, and the refund ends with one debit under the new attempt's key.
	h.tg.loseNext("refundStarPayment")
	mark = h.tg.mark()
	h.tg.push(op.messageUpdate("/refund ch-b"))
	h.tg.waitCall(mark, "sendMessage", func(c tgCall) bool { return op.toMe(c) && strings.Contains(c.Fields["text"], "Refunded 10 ⭐") })
	if calls := h.tg.callsSince(mark, "refundStarPayment"); len(calls) != 2 || calls[1].ErrorCode != 400 {
		t.Fatalf("refundStarPayment calls after a lost answer: %v, want the lost one, then one answered CHARGE_ALREADY_REFUNDED", calls)
	}
	if got := m.credits(t, pid, "tg-refund:ch-b:1"); len(got) != 1 || !got[0].Equal(decimal.RequireFromString("-13")) {
		t.Fatalf("second attempt's debit: %v", got)
	}
	bal("0")
	if st := m.paymentState("ch-b"); !strings.Contains(st, `"state":"refunded"`) {
		t.Fatalf("record: %s", st)
	}
	// The payment delivered again after its refund credits nothing and keeps the record.
	mark = h.tg.mark()
	h.tg.push(ann.starsPaymentUpdate("topup:"+pid+":xtr:"+starsRate, "ch-a", 77))
	ann.say("/balance")
	bal("0")
	if st := m.paymentState("ch-a"); !strings.Contains(st, `"state":"refunded"`) {
		t.Fatalf("record after the refunded payment came again: %s", st)
	}
}

// mark0 is the time of the call at mark (the start of a step).
func mark0(h *botHarness, mark int) time.Time {
	h.tg.mu.Lock()
	defer h.tg.mu.Unlock()
	if mark < len(h.tg.calls) {
		return h.tg.calls[mark].At
	}
	return time.Time{}
}
