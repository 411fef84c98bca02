package bot_test

import (
	"encoding/json"
	"strings"
	"testing"

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
