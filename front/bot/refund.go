package bot

// /refund: an operator returns a Stars payment. The money path mirrors the credit's: the
// payment's record (pay.<hash>) says where the refund is, every ledger move is keyed, and the
// update is retried until the record says it is done.
//
//	credited ──debit──▶ refunding ──refundStarPayment──▶ refunded
//	                        │ Telegram refuses
//	                        ▼
//	                   unrefunding ──credit back──▶ credited (refund_try + 1)
//
// The debit comes first, so a payer who already spent the money is never refunded it: the
// ledger refuses a debit below zero (or below what requests in flight hold), and the refund is
// refused with it. Each attempt debits and credits back under keys of its own number, so a
// retried attempt moves nothing twice and a new attempt after a credited-back one debits anew.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/shopspring/decimal"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	adminv1 "modelgateway/gen/gateway/admin/v1"
)

const msgRefundUsage = "Usage: /refund &lt;telegram_payment_charge_id&gt; (the charge id of a Stars payment, as the payment notice and the bot's log show it)."

func (b *Bot) cmdRefund(ctx context.Context, c *call) error {
	charge := strings.TrimSpace(c.args)
	if charge == "" || strings.ContainsAny(charge, " \t\n") {
		c.outcome = "usage"
		return b.reply(ctx, c, msgRefundUsage)
	}
	key := paymentKey(charge)
	var rec paymentRecord
	err := b.gw.get(ctx, key, &rec)
	switch {
	case errors.Is(err, errGone) || err == nil && rec.Charge != charge:
		c.outcome = "no_payment"
		return b.reply(ctx, c, "No payment with that charge id is recorded here.")
	case err != nil:
		return b.failed(ctx, c, err)
	}
	switch {
	case rec.Stars == 0 || rec.Rate == "":
		c.outcome = "not_stars"
		return b.reply(ctx, c, "Only Telegram Stars payments can be refunded here; refund a provider payment through the provider, then adjust the balance with /credit.")
	case rec.State == "refunded":
		c.outcome = "already_refunded"
		return b.reply(ctx, c, fmt.Sprintf("Payment <code>%s</code> was already refunded; nothing changed.", esc(charge)))
	case rec.State != "credited" && rec.State != "refunding" && rec.State != "unrefunding":
		c.outcome = "not_credited"
		return b.reply(ctx, c, fmt.Sprintf("Payment <code>%s</code> was never credited (%s); there is nothing to refund.", esc(charge), esc(rec.State)))
	}
	return b.refund(ctx, c, key, &rec)
}

func refundKeys(rec *paymentRecord) (debit, back string) {
	n := fmt.Sprint(rec.RefundTry)
	return "tg-refund:" + rec.Charge + ":" + n, "tg-refund-back:" + rec.Charge + ":" + n
}

// refund carries a refund on from the record's state. A returned error is retried with the
// update; every answer to the operator comes once the record says where the refund stands.
func (b *Bot) refund(ctx context.Context, c *call, key string, rec *paymentRecord) error {
	debitKey, backKey := refundKeys(rec)
	amount, err := decimal.NewFromString(rec.Amount)
	if err != nil {
		return fmt.Errorf("payment record %s: amount %q: %w", key, rec.Amount, err)
	}
	save := func(state string) error {
		rec.State = state
		return b.gw.savePayment(ctx, key, rec)
	}
	if rec.State == "credited" || rec.State == "refunding" {
		_, err := b.gw.admin.CreditProfile(ctx, &adminv1.CreditProfileRequest{
			Id: rec.Profile, Amount: amount.Neg().String(), Reason: "refund of Telegram Stars payment " + rec.Charge, IdempotencyKey: debitKey,
		})
		switch {
		case err != nil && status.Code(err) == codes.FailedPrecondition:
			// Only a first debit can be refused: a replayed one is answered from its entry.
			c.outcome = "refund_refused_balance"
			bal := "?"
			if p, perr := b.gw.admin.GetProfile(ctx, &adminv1.GetProfileRequest{Id: rec.Profile}); perr == nil {
				bal = p.GetBalance() + " " + p.GetCurrency() + " (available " + p.GetAvailable() + ")"
			}
			return b.reply(ctx, c, fmt.Sprintf("Refused: the balance of the payer (<code>%d</code>) is %s and no longer covers the payment of %s %s (%d ⭐). Nothing was debited or refunded.\n%s",
				rec.User, esc(bal), esc(rec.Amount), esc(rec.Currency), rec.Stars, esc(status.Convert(err).Message())))
		case err != nil && definitive(err):
			c.outcome = "refund_refused"
			return b.reply(ctx, c, "Refused: "+esc(status.Convert(err).Message()))
		case err != nil:
			return fmt.Errorf("refund debit: %w", err)
		}
		if rec.State != "refunding" {
			if err := save("refunding"); err != nil {
				return fmt.Errorf("record refund debited: %w", err)
			}
		}
		err = b.tg.refundStarPayment(ctx, rec.User, rec.Charge)
		switch {
		case err == nil || errors.Is(err, errAlreadyRefunded):
			if err := save("refunded"); err != nil {
				return fmt.Errorf("record refund done: %w", err)
			}
			c.outcome = "refunded"
			b.log.Info("stars payment refunded", "record", key, "stars", rec.Stars)
			return b.reply(ctx, c, fmt.Sprintf("Refunded %d ⭐ to <code>%d</code> (payment <code>%s</code>); debited %s %s from their balance.",
				rec.Stars, rec.User, esc(rec.Charge), esc(rec.Amount), esc(rec.Currency)))
		case !refused(err):
			// Not known whether Telegram refunded: asked again, it says so if it did.
			return fmt.Errorf("refundStarPayment: %w", err)
		}
		rec.Why = "Telegram refused the refund: " + err.Error()
		if err := save("unrefunding"); err != nil {
			return fmt.Errorf("record refund refused: %w", err)
		}
	}
	// unrefunding: Telegram refused; the debit goes back under this attempt's key.
	_, err = b.gw.admin.CreditProfile(ctx, &adminv1.CreditProfileRequest{
		Id: rec.Profile, Amount: amount.String(), Reason: "refund of Telegram Stars payment " + rec.Charge + " refused by Telegram", IdempotencyKey: backKey,
	})
	if err != nil {
		return fmt.Errorf("credit back a refused refund: %w", err)
	}
	why := rec.Why
	rec.RefundTry++
	if err := save("credited"); err != nil {
		return fmt.Errorf("record refund credited back: %w", err)
	}
	c.outcome = "refund_refused_by_telegram"
	return b.reply(ctx, c, fmt.Sprintf("The refund of <code>%s</code> did not go through (%s); the debit was credited back, the balance is as before.", esc(rec.Charge), esc(why)))
}
