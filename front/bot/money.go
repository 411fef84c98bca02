package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	tgbot "github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	adminv1 "modelgateway/gen/gateway/admin/v1"
)

// Bounds of one top-up in the billing currency; Telegram's own per-currency limits are of
// the same order.
var (
	minTopUp = decimal.NewFromInt(1)
	maxTopUp = decimal.NewFromInt(100000)
)

// The billing currencies (RUB, USD, EUR, CNY) all have two-digit minor units in the Bot
// Payments API.
const minorDigits = 2

func topUpPayload(profileID string) string { return "topup:" + profileID }

// starsCurrency is Telegram Stars' currency code; its amounts are whole stars.
const starsCurrency = "XTR"

// maxStars bounds one Stars invoice: Telegram refuses larger ones.
const maxStars = 10000

// starsPayload is the payload of a Stars invoice: the profile and the rate it was priced at,
// so that the credit is the one the invoice promised even when the operator changes the rate
// between the invoice and the payment (pre-checkout declines an invoice of an earlier rate).
func starsPayload(profileID string, rate decimal.Decimal) string {
	return "topup:" + profileID + ":xtr:" + rate.String()
}

// payloadRate is the rate a Stars invoice's payload carries.
func payloadRate(payload string) (decimal.Decimal, bool) {
	_, r, ok := strings.Cut(payload, ":xtr:")
	if !ok {
		return decimal.Zero, false
	}
	rate, err := decimal.NewFromString(r)
	return rate, err == nil && rate.IsPositive()
}

// starsFor is the number of stars an amount costs at rate: rounded up, so the credit
// (stars × rate) is at least the amount asked. QuoRem keeps it exact: a rate that does not
// divide the amount evenly costs one star more, never one less.
func starsFor(amount, rate decimal.Decimal) int64 {
	q, r := amount.QuoRem(rate, 0)
	if !r.IsZero() {
		q = q.Add(decimal.NewFromInt(1))
	}
	return q.IntPart()
}

// topUp is an invoice for amount in the billing currency: in Stars when a rate is set, else
// in the billing currency through the provider. A refusal (bad amount) is a message for the
// user; ok is false when top-ups are off.
type topUpInvoice struct {
	Title, Description, Payload, Currency, ProviderToken string
	Price                                                int
	// Credit is what the payment will credit, in the billing currency.
	Credit decimal.Decimal
}

// topUpsOn says whether the bot sells top-ups at all.
func (b *Bot) topUpsOn() bool { return !b.cfg.StarsRate.IsZero() || b.cfg.PaymentToken != "" }

// topUpBounds are the smallest and largest amounts one top-up may ask, in the billing currency.
func (b *Bot) topUpBounds() (lo, hi decimal.Decimal) {
	hi = maxTopUp
	if r := b.cfg.StarsRate; !r.IsZero() {
		if m := r.Mul(decimal.NewFromInt(maxStars)); m.LessThan(hi) {
			hi = m
		}
	}
	return minTopUp, hi
}

// invoiceFor prices a top-up of amount for the profile; why is the refusal of a bad amount.
func (b *Bot) invoiceFor(p *adminv1.Profile, amountText string) (inv *topUpInvoice, why string) {
	lo, hi := b.topUpBounds()
	amount, err := decimal.NewFromString(strings.TrimSpace(amountText))
	if err != nil || amount.LessThan(lo) || amount.GreaterThan(hi) || !amount.Equal(amount.Truncate(minorDigits)) {
		return nil, fmt.Sprintf("from %s to %s %s, at most two decimals", lo, hi, p.GetCurrency())
	}
	if rate := b.cfg.StarsRate; !rate.IsZero() {
		stars := starsFor(amount, rate)
		credit := rate.Mul(decimal.NewFromInt(stars))
		return &topUpInvoice{
			Title: "Balance top-up", Payload: starsPayload(p.GetId(), rate), Currency: starsCurrency, Price: int(stars), Credit: credit,
			Description: fmt.Sprintf("Adds %s %s to your gateway balance (%d ⭐ at %s %s per star).", credit, p.GetCurrency(), stars, rate, p.GetCurrency()),
		}, ""
	}
	return &topUpInvoice{
		Title: "Balance top-up", Payload: topUpPayload(p.GetId()), Currency: p.GetCurrency(), ProviderToken: b.cfg.PaymentToken,
		Price: int(amount.Shift(minorDigits).IntPart()), Credit: amount,
		Description: fmt.Sprintf("Adds %s %s to your gateway balance.", amount, p.GetCurrency()),
	}, ""
}

// cmdTopUp sends an invoice when payments are configured.
func (b *Bot) cmdTopUp(ctx context.Context, c *call) error {
	if !b.topUpsOn() {
		c.outcome = "payments_off"
		return b.reply(ctx, c, "Top-ups through the bot are not enabled here. Balances are topped up by the operator of this gateway: send them your Telegram user id, "+
			fmt.Sprintf("<code>%d</code>, and the amount.", c.from.ID))
	}
	p, err := b.profile(ctx, c)
	if err != nil {
		return b.failed(ctx, c, err)
	}
	inv, why := b.invoiceFor(p, c.args)
	if inv == nil {
		c.outcome = "bad_amount"
		return b.reply(ctx, c, "Usage: /topup &lt;amount&gt;, "+esc(why)+".")
	}
	if !b.limits.allow(c.from.ID, "topup") {
		c.outcome = "rate_limited"
		return b.reply(ctx, c, msgLimited)
	}
	err = b.tg.sendInvoice(ctx, &tgbot.SendInvoiceParams{
		ChatID: c.chat, Title: inv.Title, Description: inv.Description, Payload: inv.Payload, ProviderToken: inv.ProviderToken,
		Currency: inv.Currency, Prices: []models.LabeledPrice{{Label: "Top-up", Amount: inv.Price}},
	})
	if err != nil {
		c.outcome = "invoice_failed: " + err.Error()
		return b.reply(ctx, c, "The invoice could not be sent; please try again later.")
	}
	c.outcome = "invoice_sent"
	return nil
}

// preCheckout answers Telegram's last check before a payment. It must be answered within
// 10 s, so nothing here is retried: an unreachable gateway declines with a "try again".
// A Stars invoice must carry the rate in force now; a fiat one the billing currency.
func (b *Bot) preCheckout(ctx context.Context, c *call) error {
	q := c.u.PreCheckoutQuery
	ok, why := false, ""
	if q.From == nil {
		why = "Unknown payer."
	} else {
		p, err := b.gw.admin.LookupProfile(ctx, &adminv1.LookupProfileRequest{ExternalRef: externalRef(q.From.ID)})
		stars := q.Currency == starsCurrency
		switch {
		case err != nil && unavailable(err):
			why = "The service is briefly unavailable; please try again in a minute."
		case err != nil:
			why = "No account found for you; send /start first."
		case !strings.HasPrefix(q.InvoicePayload, topUpPayload(p.GetId())):
			why = "This invoice is not for your account."
		case q.TotalAmount <= 0,
			stars && (b.cfg.StarsRate.IsZero() || q.InvoicePayload != starsPayload(p.GetId(), b.cfg.StarsRate)),
			// With a Stars rate set, the fiat path is closed: only Stars invoices are paid.
			!stars && (!b.cfg.StarsRate.IsZero() || q.Currency != p.GetCurrency() || q.InvoicePayload != topUpPayload(p.GetId())):
			why = "This invoice no longer matches the current prices; request a new one with /topup."
		default:
			ok = true
		}
	}
	c.outcome = "declined"
	if ok {
		c.outcome = "approved"
	}
	if err := b.tg.answerPreCheckout(ctx, q.ID, ok, why); err != nil {
		c.outcome += "; answer failed: " + err.Error()
	}
	return nil
}

// paymentRecord is a Telegram payment as the bot keeps it in the gateway (pay.<sha256 of the
// charge id>, never expiring), written before the credit. The first delivery fixes the
// profile and the amount, so every later delivery of the same charge credits the same profile
// the same amount under the same idempotency key: once, whatever failed in between. A payment
// that cannot be credited stays here as "pending" for the operator.
type paymentRecord struct {
	Charge         string `json:"charge"`
	ProviderCharge string `json:"provider_charge"`
	User           int64  `json:"user"`
	Profile        string `json:"profile"`
	// Currency and Amount are the credit, in the billing currency for a Stars payment.
	Currency string `json:"currency"`
	Amount   string `json:"amount"`
	// Stars is what a Stars payment paid, at Rate billing currency per star.
	Stars int    `json:"stars,omitempty"`
	Rate  string `json:"rate,omitempty"`
	// State is "crediting" (recorded, credit not known to be done), "credited", "pending"
	// (refused for good; Why says by what), or a refund's: "refunding" (debited, refund not
	// known to be done), "unrefunding" (Telegram refused the refund; the debit is being
	// credited back) and "refunded".
	State string `json:"state"`
	Why   string `json:"why,omitempty"`
	// RefundTry numbers the refund attempts: each attempt debits under its own key, so a
	// refund tried again after one that was credited back debits again.
	RefundTry int `json:"refund_try,omitempty"`
}

// paymentKey names a payment's record. Charge ids are Telegram's strings, not bound to the
// characters a state key allows, so the key is their hash.
func paymentKey(charge string) string {
	s := sha256.Sum256([]byte(charge))
	return prefixPayment + hex.EncodeToString(s[:16])
}

// savePayment writes a payment's record; it never expires.
func (g *gateway) savePayment(ctx context.Context, key string, rec *paymentRecord) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = g.admin.PutBotState(ctx, &adminv1.PutBotStateRequest{Key: key, Value: string(raw)})
	return err
}

// payment credits a successful payment, exactly once per Telegram charge id. Every failure is
// returned for a retry except a definitive refusal, which leaves the payment pending and tells
// the operators: the update counts as handled only when the credit, or the pending record, is
// in the gateway, and the user hears of it only then.
func (b *Bot) payment(ctx context.Context, c *call) error {
	sp := c.u.Message.SuccessfulPayment
	if c.from == nil || sp.TelegramPaymentChargeID == "" {
		// Telegram always sends both; without them there is nothing to key a credit on.
		c.outcome = "payment_unattributable"
		b.log.Error("payment not credited: no payer or charge id", "update_id", c.u.ID)
		return nil
	}
	p, err := b.profile(ctx, c)
	if err != nil {
		return fmt.Errorf("payer's profile: %w", err)
	}
	rec := &paymentRecord{
		Charge: sp.TelegramPaymentChargeID, ProviderCharge: sp.ProviderPaymentChargeID, User: c.from.ID, Profile: p.GetId(),
		Currency: sp.Currency, Amount: decimal.New(int64(sp.TotalAmount), -minorDigits).String(), State: "crediting",
	}
	if sp.Currency == starsCurrency {
		// Whole stars, credited at the rate the invoice was priced at (pre-checkout saw it was
		// the rate in force). Without a rate the currency stays XTR, which pends the payment.
		rec.Stars, rec.Amount = sp.TotalAmount, strconv.Itoa(sp.TotalAmount)
		if rate, ok := payloadRate(sp.InvoicePayload); ok {
			rec.Currency, rec.Rate = p.GetCurrency(), rate.String()
			rec.Amount = rate.Mul(decimal.NewFromInt(int64(sp.TotalAmount))).String()
		}
	}
	raw, _ := json.Marshal(rec)
	key := paymentKey(rec.Charge)
	put, err := b.gw.admin.PutBotState(ctx, &adminv1.PutBotStateRequest{Key: key, Value: string(raw), OnlyIfAbsent: true})
	if err != nil {
		return fmt.Errorf("record payment: %w", err)
	}
	if !put.GetCreated() {
		var first paymentRecord
		if err := json.Unmarshal([]byte(put.GetState().GetValue()), &first); err == nil && first.Charge == rec.Charge {
			rec = &first
		}
	}
	switch {
	case rec.State == "pending":
		c.outcome = "payment_pending"
		return b.reply(ctx, c, msgPaymentPending)
	case rec.State == "refunding" || rec.State == "unrefunding" || rec.State == "refunded":
		// Credited before, and since in a refund's hands: the record must not go back to
		// "credited".
		c.outcome = "payment_refunded"
		return nil
	case rec.Currency != p.GetCurrency():
		return b.pendPayment(ctx, c, key, rec, "currency "+rec.Currency+" is not the balance's "+p.GetCurrency())
	}
	p, err = b.gw.admin.CreditProfile(ctx, &adminv1.CreditProfileRequest{
		Id: rec.Profile, Amount: rec.Amount, Reason: "Telegram payment " + rec.Charge, IdempotencyKey: "tg-payment:" + rec.Charge,
	})
	switch {
	case err != nil && definitive(err):
		return b.pendPayment(ctx, c, key, rec, "credit refused: "+grpcCode(err))
	case err != nil:
		return fmt.Errorf("credit payment: %w", err)
	}
	if rec.State != "credited" {
		rec.State = "credited"
		raw, _ = json.Marshal(rec)
		if _, err := b.gw.admin.PutBotState(ctx, &adminv1.PutBotStateRequest{Key: key, Value: string(raw)}); err != nil {
			// Retried: the credit replays under its key and moves nothing.
			return fmt.Errorf("record payment credited: %w", err)
		}
	}
	c.outcome = "credited"
	return b.reply(ctx, c, fmt.Sprintf("Payment received: %s %s.\n%s", rec.Amount, esc(p.GetCurrency()), balanceText(p)))
}

// pendPayment keeps a payment the gateway refused for good: recorded as pending, logged as an
// error, told to the operators and to the payer. Retrying would not change the answer and
// would hold up every later update.
func (b *Bot) pendPayment(ctx context.Context, c *call, key string, rec *paymentRecord, why string) error {
	rec.State, rec.Why = "pending", why
	raw, _ := json.Marshal(rec)
	if _, err := b.gw.admin.PutBotState(ctx, &adminv1.PutBotStateRequest{Key: key, Value: string(raw)}); err != nil {
		return fmt.Errorf("record payment pending: %w", err)
	}
	c.outcome = "payment_pending"
	b.log.Error("payment not credited: kept pending for the operator", "update_id", c.u.ID, "record", key, "why", why)
	for op := range b.cfg.Operators {
		_, _ = b.tg.send(ctx, op, fmt.Sprintf("⚠️ A payment could not be credited (%s).\nPayer: <code>%d</code>, amount %s %s, charge <code>%s</code>, record <code>%s</code>.\nCredit it by hand with /credit once resolved.",
			esc(why), rec.User, esc(rec.Amount), esc(rec.Currency), esc(rec.Charge), esc(key)), nil, false)
	}
	return b.reply(ctx, c, msgPaymentPending)
}

// operatorProfile finds a profile by Telegram user id or profile id.
func (b *Bot) operatorProfile(ctx context.Context, target string) (*adminv1.Profile, error) {
	if _, err := uuid.Parse(target); err == nil {
		return b.gw.admin.GetProfile(ctx, &adminv1.GetProfileRequest{Id: target})
	}
	id, err := strconv.ParseInt(target, 10, 64)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, "not a Telegram user id or profile id")
	}
	return b.gw.admin.LookupProfile(ctx, &adminv1.LookupProfileRequest{ExternalRef: externalRef(id)})
}

// cmdCredit credits a balance. The idempotency key is the operator's message, chat and
// message id, which Telegram never renumbers (update ids it does): the same command delivered
// again, under any update id, credits once; a new message is a new credit. Failures other than
// a refusal are retried under the same key.
func (b *Bot) cmdCredit(ctx context.Context, c *call) error {
	f := strings.Fields(c.args)
	if len(f) != 2 {
		c.outcome = "usage"
		return b.reply(ctx, c, "Usage: /credit &lt;tg user id or profile id&gt; &lt;amount&gt;")
	}
	p, err := b.operatorProfile(ctx, f[0])
	if err != nil {
		if isNotFound(err) || status.Code(err) == codes.InvalidArgument {
			c.outcome = "no_profile"
			return b.reply(ctx, c, "No such profile (a Telegram user gets one with /start).")
		}
		return b.failed(ctx, c, err)
	}
	p, err = b.gw.admin.CreditProfile(ctx, &adminv1.CreditProfileRequest{
		Id: p.GetId(), Amount: f[1], Reason: fmt.Sprintf("operator credit by tg:%d", c.from.ID),
		IdempotencyKey: operatorCreditKey(c.u.Message),
	})
	if err != nil {
		if s, ok := status.FromError(err); ok && definitive(err) {
			c.outcome = "refused"
			return b.reply(ctx, c, "Refused: "+esc(s.Message()))
		}
		return fmt.Errorf("operator credit: %w", err)
	}
	c.outcome = "credited"
	return b.reply(ctx, c, fmt.Sprintf("Credited %s (<code>%s</code>, %s).\n%s", esc(f[1]), esc(p.GetId()), esc(p.GetExternalRef()), balanceText(p)))
}

func operatorCreditKey(m *models.Message) string {
	return "tg-credit:" + strconv.FormatInt(m.Chat.ID, 10) + ":" + strconv.Itoa(m.ID)
}

// cmdFind shows a user's balance and keys to an operator.
func (b *Bot) cmdFind(ctx context.Context, c *call) error {
	p, err := b.operatorProfile(ctx, strings.TrimSpace(c.args))
	if err != nil {
		if isNotFound(err) || status.Code(err) == codes.InvalidArgument {
			c.outcome = "no_profile"
			return b.reply(ctx, c, "No such profile. Usage: /find &lt;tg user id&gt;")
		}
		return b.failed(ctx, c, err)
	}
	ks, err := b.gw.admin.ListKeys(ctx, &adminv1.ListKeysRequest{ProfileId: p.GetId()})
	if err != nil {
		return b.failed(ctx, c, err)
	}
	var s strings.Builder
	fmt.Fprintf(&s, "Profile <code>%s</code> (%s, %s)\n%s\n", esc(p.GetId()), esc(p.GetExternalRef()), esc(p.GetDisplayName()), balanceText(p))
	for _, k := range ks.GetKeys() {
		s.WriteString("\n" + keyLine(k))
	}
	if len(ks.GetKeys()) == 0 {
		s.WriteString("\nNo keys.")
	}
	c.outcome = "ok"
	return b.reply(ctx, c, clip(s.String()))
}
