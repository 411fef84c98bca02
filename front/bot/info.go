package bot

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "modelgateway/gen/gateway/admin/v1"
	catalogv1 "modelgateway/gen/gateway/catalog/v1"
)

func (b *Bot) cmdStart(ctx context.Context, c *call) error {
	p, err := b.profile(ctx, c)
	if err != nil {
		return b.failed(ctx, c, err)
	}
	c.outcome = "ok"
	return b.reply(ctx, c, fmt.Sprintf("Welcome! Your balance: <b>%s %s</b>.\n\nCreate an API key with /newkey, list your keys with /keys, see prices with /models. /help explains everything.",
		esc(p.GetBalance()), esc(p.GetCurrency())))
}

func (b *Bot) cmdHelp(ctx context.Context, c *call) error {
	c.outcome = "ok"
	return b.reply(ctx, c, b.helpText(b.cfg.Operators[c.from.ID]))
}

func (b *Bot) cmdBalance(ctx context.Context, c *call) error {
	p, err := b.profile(ctx, c)
	if err != nil {
		return b.failed(ctx, c, err)
	}
	c.outcome = "ok"
	return b.reply(ctx, c, balanceText(p))
}

func balanceText(p *adminv1.Profile) string {
	avail := p.GetAvailable()
	if avail == "" {
		avail = p.GetBalance()
	}
	return fmt.Sprintf("Balance: <b>%s %s</b>\nAvailable now: <b>%s %s</b> (the balance less what requests in flight hold)",
		esc(p.GetBalance()), esc(p.GetCurrency()), esc(avail), esc(p.GetCurrency()))
}

// cmdModels lists the catalogue's models with their prices in the billing currency.
func (b *Bot) cmdModels(ctx context.Context, c *call) error {
	p, err := b.profile(ctx, c)
	if err != nil {
		return b.failed(ctx, c, err)
	}
	cat, err := b.gw.catalog.GetCatalog(ctx, &catalogv1.GetCatalogRequest{Currency: p.GetCurrency()})
	if err != nil {
		return b.failed(ctx, c, err)
	}
	var s strings.Builder
	fmt.Fprintf(&s, "<b>Models</b> (prices in %s)\n", esc(cat.GetCurrency()))
	n := 0
	for _, f := range cat.GetFamilies() {
		for _, m := range f.GetModels() {
			n++
			fmt.Fprintf(&s, "\n<code>%s</code>", esc(m.GetId()))
			if d := m.GetDisplayName(); d != "" && d != m.GetId() {
				fmt.Fprintf(&s, " — %s", esc(d))
			}
			for _, pr := range m.GetPrices() {
				fmt.Fprintf(&s, "\n  %s: %s", esc(strings.Join(pr.GetEndpointFamilies(), ", ")), priceText(pr.GetComponents()))
			}
		}
	}
	if n == 0 {
		s.WriteString("\nNo models are available yet.")
	}
	c.outcome = "ok"
	return b.reply(ctx, c, clip(s.String()))
}

func priceText(cs *catalogv1.Components) string {
	var parts []string
	for _, x := range []struct {
		name string
		a    *catalogv1.Amount
	}{{"input", cs.GetInput()}, {"cached input", cs.GetCachedInput()}, {"cache write", cs.GetCacheWrite()}, {"output", cs.GetOutput()},
		{"audio input", cs.GetAudioInput()}, {"audio output", cs.GetAudioOutput()}, {"request", cs.GetRequest()}} {
		if x.a == nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s %s", x.name, esc(x.a.GetAmount()), esc(unitText(x.a.GetUnit()))))
	}
	if len(parts) == 0 {
		return "price not available"
	}
	return strings.Join(parts, ", ")
}

// unitText makes RUB_per_1M_tokens read as "RUB per 1M tokens".
func unitText(u string) string { return strings.ReplaceAll(u, "_", " ") }

// usageDays is how far back /usage looks: today and the days before it, UTC.
const usageDays = 7

// cmdUsage shows the last usageDays days by day and model (requests, tokens by category,
// cost) and the batches created in them (batches.go) of all the user's keys, or of one:
// `/usage <key name or prefix>`.
func (b *Bot) cmdUsage(ctx context.Context, c *call) error {
	p, err := b.profile(ctx, c)
	if err != nil {
		return b.failed(ctx, c, err)
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	req := &adminv1.GetUsageSummaryRequest{Id: p.GetId(), GroupBy: []string{"day", "model"},
		StartTime: timestamppb.New(today.AddDate(0, 0, 1-usageDays))}
	of := "all your keys"
	if c.args != "" {
		ks, err := b.gw.admin.ListKeys(ctx, &adminv1.ListKeysRequest{ProfileId: p.GetId()})
		if err != nil {
			return b.failed(ctx, c, err)
		}
		k, n := findKey(ks.GetKeys(), c.args)
		switch {
		case n == 0:
			c.outcome = "no_such_key"
			return b.reply(ctx, c, "You have no key with that name or prefix. /keys lists them.")
		case n > 1:
			c.outcome = "ambiguous"
			return b.reply(ctx, c, "Several of your keys match; use the prefix shown by /keys.")
		}
		req.KeyId = k.GetId()
		of = fmt.Sprintf("key <b>%s</b> (<code>%s…</code>)", esc(k.GetName()), esc(k.GetPrefix()))
	}
	u, err := b.gw.admin.GetUsageSummary(ctx, req)
	if err != nil {
		return b.failed(ctx, c, err)
	}
	batches, err := b.batchesLine(ctx, p.GetId(), req.GetKeyId(), req.GetStartTime())
	if err != nil {
		return b.failed(ctx, c, err)
	}
	if batches != "" {
		batches = "\n\n" + esc(batches)
	}
	c.outcome = "ok"
	if len(u.GetRows()) == 0 {
		return b.reply(ctx, c, fmt.Sprintf("No requests in the last %d days (%s).", usageDays, of)+batches)
	}
	var s strings.Builder
	fmt.Fprintf(&s, "<b>Usage, last %d days</b> — %s\n", usageDays, of)
	var requests int64
	total := decimal.Zero
	day := ""
	for _, r := range u.GetRows() { // ordered by day, then model
		if r.GetDay() != day {
			day = r.GetDay()
			fmt.Fprintf(&s, "\n<b>%s</b>", esc(day))
		}
		cost, err := decimal.NewFromString(r.GetCost())
		if err != nil {
			cost = decimal.Zero
		}
		requests += r.GetRequests()
		total = total.Add(cost)
		fmt.Fprintf(&s, "\n  <code>%s</code>: %d requests, input %d, cached input %d, cache write %d, output %d — %s %s",
			esc(r.GetModel()), r.GetRequests(), r.GetInputTokens(), r.GetCachedInputTokens(), r.GetCacheWriteTokens(), r.GetOutputTokens(),
			esc(cost.String()), esc(p.GetCurrency()))
	}
	fmt.Fprintf(&s, "\n\nTotal: %d requests, %s %s", requests, esc(total.String()), esc(p.GetCurrency()))
	return b.reply(ctx, c, clip(s.String()+batches))
}

// findKey finds one of the user's keys by name or prefix (at least 4 characters, "…" allowed
// at the end, as /keys shows it): the active ones first, else a revoked one (its usage stays).
// n is how many match among the ones chosen from.
func findKey(ks []*adminv1.Key, arg string) (k *adminv1.Key, n int) {
	arg = strings.TrimSuffix(strings.TrimSpace(arg), "…")
	var active, other []*adminv1.Key
	for _, k := range ks {
		if k.GetName() != arg && (len(arg) < 4 || !strings.HasPrefix(k.GetPrefix(), arg)) {
			continue
		}
		if k.GetState() == keyActive {
			active = append(active, k)
		} else {
			other = append(other, k)
		}
	}
	found := active
	if len(found) == 0 {
		found = other
	}
	if len(found) == 1 {
		return found[0], 1
	}
	return nil, len(found)
}
