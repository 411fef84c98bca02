package bot

// /limit: a key's budget through UpdateKey (the admin RPCs only), and the budget lines of /keys.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	adminv1 "modelgateway/gen/gateway/admin/v1"
)

const msgLimitUsage = "Usage: /limit &lt;key name or prefix&gt; &lt;amount&gt; [day|week|month|total] (month when left out), or /limit &lt;key&gt; off."

// budgetLine is a key's budget, its window's spend and its expiry, for /keys and /limit.
func budgetLine(k *adminv1.Key, currency string) string {
	var s strings.Builder
	if b := k.GetBudget(); b != nil {
		fmt.Fprintf(&s, "\n  budget: %s of %s %s %s", esc(k.GetBudgetSpent()), esc(b.GetAmount()), esc(currency), periodText(b.GetPeriod()))
		if r := k.GetBudgetResetsAt(); r != nil {
			fmt.Fprintf(&s, ", resets %s", r.AsTime().UTC().Format("2006-01-02 15:04 UTC"))
		}
	} else {
		s.WriteString("\n  budget: none")
	}
	if e := k.GetExpireTime(); e != nil {
		verb := "expires"
		if !e.AsTime().After(time.Now()) {
			verb = "expired"
		}
		fmt.Fprintf(&s, "\n  %s %s", verb, e.AsTime().UTC().Format("2006-01-02 15:04 UTC"))
	}
	return s.String()
}

func periodText(p string) string {
	if p == "TOTAL" {
		return "in total"
	}
	return "per " + strings.ToLower(p)
}

// cmdLimit sets or removes the budget of one of the user's keys: /limit <key> <amount>
// [day|week|month|total], /limit <key> off.
func (b *Bot) cmdLimit(ctx context.Context, c *call) error {
	f := strings.Fields(c.args)
	if len(f) < 2 || len(f) > 3 {
		c.outcome = "usage"
		return b.reply(ctx, c, msgLimitUsage)
	}
	budget := &adminv1.Budget{Amount: "0"} // off
	if !strings.EqualFold(f[1], "off") {
		amount, err := decimal.NewFromString(f[1])
		if err != nil || !amount.IsPositive() {
			c.outcome = "usage"
			return b.reply(ctx, c, "The amount must be a positive number. "+msgLimitUsage)
		}
		period := "MONTH"
		if len(f) == 3 {
			period = strings.ToUpper(f[2])
			switch period {
			case "DAY", "WEEK", "MONTH", "TOTAL":
			default:
				c.outcome = "usage"
				return b.reply(ctx, c, "The period is day, week, month or total. "+msgLimitUsage)
			}
		}
		budget = &adminv1.Budget{Amount: amount.String(), Period: period}
	} else if len(f) == 3 {
		c.outcome = "usage"
		return b.reply(ctx, c, msgLimitUsage)
	}
	p, err := b.profile(ctx, c)
	if err != nil {
		return b.failed(ctx, c, err)
	}
	k, found, err := b.findKey(ctx, c, p.GetId(), f[0])
	if err != nil || !found {
		return err
	}
	k, err = b.gw.admin.UpdateKey(ctx, &adminv1.UpdateKeyRequest{Key: &adminv1.Key{Id: k.GetId(), Budget: budget},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"budget"}}})
	if err != nil {
		return b.failed(ctx, c, err)
	}
	c.outcome = "ok"
	return b.reply(ctx, c, "Saved: "+keyLine(k)+budgetLine(k, p.GetCurrency()))
}
