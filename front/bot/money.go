package bot

import (
	"context"
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

// cmdTopUp sends an invoice when payments are configured.
func (b *Bot) cmdTopUp(ctx context.Context, c *call) error {
	if b.cfg.PaymentToken == "" {
		c.outcome = "payments_off"
		return b.reply(ctx, c, "Top-ups through the bot are not enabled here. Balances are topped up by the operator of this gateway: send them your Telegram user id, "+
			fmt.Sprintf("<code>%d</code>, and the amount.", c.from.ID))
	}
	amount, err := decimal.NewFromString(strings.TrimSpace(c.args))
	if err != nil || amount.LessThan(minTopUp) || amount.GreaterThan(maxTopUp) || !amount.Equal(amount.Truncate(minorDigits)) {
		c.outcome = "bad_amount"
		return b.reply(ctx, c, fmt.Sprintf("Usage: /topup &lt;amount&gt;, from %s to %s, at most two decimals.", minTopUp, maxTopUp))
	}
	p, err := b.profile(ctx, c)
	if err != nil {
		return b.failed(ctx, c, err)
	}
	if !b.limits.allow(c.from.ID, "topup") {
		c.outcome = "rate_limited"
		return b.reply(ctx, c, msgLimited)
	}
	minor := amount.Shift(minorDigits).IntPart()
	err = b.tg.sendInvoice(ctx, &tgbot.SendInvoiceParams{
		ChatID: c.chat, Title: "Balance top-up", Description: fmt.Sprintf("Adds %s %s to your gateway balance.", amount, p.GetCurrency()),
		Payload: topUpPayload(p.GetId()), ProviderToken: b.cfg.PaymentToken, Currency: p.GetCurrency(),
		Prices: []models.LabeledPrice{{Label: "Top-up", Amount: int(minor)}},
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
func (b *Bot) preCheckout(ctx context.Context, c *call) error {
	q := c.u.PreCheckoutQuery
	ok, why := false, ""
	if q.From == nil {
		why = "Unknown payer."
	} else {
		p, err := b.gw.admin.LookupProfile(ctx, &adminv1.LookupProfileRequest{ExternalRef: externalRef(q.From.ID)})
		switch {
		case err != nil && unavailable(err):
			why = "The service is briefly unavailable; please try again in a minute."
		case err != nil:
			why = "No account found for you; send /start first."
		case q.InvoicePayload != topUpPayload(p.GetId()):
			why = "This invoice is not for your account."
		case q.Currency != p.GetCurrency() || q.TotalAmount <= 0:
			why = "This invoice no longer matches the billing currency; request a new one with /topup."
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

// payment credits a successful payment. The credit's idempotency key is Telegram's charge
// id, so a payment delivered twice credits once.
func (b *Bot) payment(ctx context.Context, c *call) error {
	sp := c.u.Message.SuccessfulPayment
	if c.from == nil || sp.TelegramPaymentChargeID == "" {
		c.outcome = "payment_unattributable"
		return nil
	}
	p, err := b.profile(ctx, c)
	if err != nil {
		return b.failed(ctx, c, err)
	}
	if sp.Currency != p.GetCurrency() {
		c.outcome = "payment_currency_mismatch"
		return b.reply(ctx, c, "Your payment arrived in another currency than your balance; the operator will credit it by hand. Please contact them.")
	}
	amount := decimal.New(int64(sp.TotalAmount), -minorDigits)
	p, err = b.gw.admin.CreditProfile(ctx, &adminv1.CreditProfileRequest{
		Id: p.GetId(), Amount: amount.String(), Reason: "Telegram payment", IdempotencyKey: "tg-payment:" + sp.TelegramPaymentChargeID,
	})
	if err != nil {
		return b.failed(ctx, c, err)
	}
	c.outcome = "credited"
	return b.reply(ctx, c, fmt.Sprintf("Payment received: %s %s.\n%s", amount, esc(p.GetCurrency()), balanceText(p)))
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

// cmdCredit credits a balance; the update id makes the credit's idempotency key, so a
// redelivered command credits once.
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
		IdempotencyKey: "tg-credit:" + strconv.FormatInt(c.u.ID, 10),
	})
	if err != nil {
		if s, ok := status.FromError(err); ok && (s.Code() == codes.InvalidArgument || s.Code() == codes.FailedPrecondition) {
			c.outcome = "refused"
			return b.reply(ctx, c, "Refused: "+esc(s.Message()))
		}
		return b.failed(ctx, c, err)
	}
	c.outcome = "credited"
	return b.reply(ctx, c, fmt.Sprintf("Credited %s (<code>%s</code>, %s).\n%s", esc(f[1]), esc(p.GetId()), esc(p.GetExternalRef()), balanceText(p)))
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
