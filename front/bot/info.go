package bot

import (
	"context"
	"fmt"
	"strings"

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

// cmdUsage lists the last requests with their tokens by category and cost.
func (b *Bot) cmdUsage(ctx context.Context, c *call) error {
	p, err := b.profile(ctx, c)
	if err != nil {
		return b.failed(ctx, c, err)
	}
	u, err := b.gw.admin.ListUsage(ctx, &adminv1.ListUsageRequest{Id: p.GetId(), PageSize: 10})
	if err != nil {
		return b.failed(ctx, c, err)
	}
	c.outcome = "ok"
	if len(u.GetRecords()) == 0 {
		return b.reply(ctx, c, "No requests yet.")
	}
	var s strings.Builder
	s.WriteString("<b>Last requests</b>\n")
	for _, r := range u.GetRecords() {
		cost := "not charged"
		if r.GetCost() != "" {
			cost = r.GetCost() + " " + r.GetCurrency()
		}
		fmt.Fprintf(&s, "\n%s <code>%s</code> %s (%s)\n  input %d, cached input %d, cache write %d, output %d (reasoning %d) — %s",
			r.GetStartTime().AsTime().UTC().Format("01-02 15:04"), esc(r.GetModel()), esc(r.GetEndpointFamily()), esc(r.GetStatus()),
			r.GetInputTokens(), r.GetCachedInputTokens(), r.GetCacheWriteTokens(), r.GetOutputTokens(), r.GetReasoningTokens(), esc(cost))
	}
	return b.reply(ctx, c, clip(s.String()))
}
