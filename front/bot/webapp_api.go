package bot

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	tgbot "github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/shopspring/decimal"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "modelgateway/gen/gateway/admin/v1"
	catalogv1 "modelgateway/gen/gateway/catalog/v1"
)

// The Mini App's API routes (webapp.go serves them): each answers for the key holder named by
// the call's checked initData and nothing else.

// ownKey is the caller's key named in the path: another user's key id (or none) is 404,
// the same answer as a key that does not exist, so ids of others cannot be probed.
func (b *Bot) pathKey(c *apiCall) (*adminv1.Key, error) {
	k, err := b.gw.ownKey(c.ctx, c.profile.GetId(), c.r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if k == nil {
		return nil, refuse(http.StatusNotFound, "That is not one of your keys.")
	}
	return k, nil
}

// appKey is a key as the page shows it; never a secret.
type appKey struct {
	ID             string     `json:"id"`
	Name           string     `json:"name"`
	Prefix         string     `json:"prefix"`
	State          string     `json:"state"`
	Endpoints      []string   `json:"allowed_endpoints"`
	Models         []string   `json:"allowed_models"`
	Budget         *appBudget `json:"budget,omitempty"`
	BudgetSpent    string     `json:"budget_spent,omitempty"`
	BudgetResetsAt string     `json:"budget_resets_at,omitempty"`
	ExpireTime     string     `json:"expire_time,omitempty"`
	CreateTime     string     `json:"create_time,omitempty"`
	MaxRPS         int32      `json:"max_requests_per_second"`
	MaxConcurrent  int32      `json:"max_concurrent_requests"`
	MaxTPM         int32      `json:"max_tokens_per_minute"`
	// Spend and Requests are the key's last webAppDays days.
	Spend    string `json:"spend"`
	Requests int64  `json:"requests"`
}

type appBudget struct {
	Amount string `json:"amount"`
	Period string `json:"period"`
}

func timeText(t *timestamppb.Timestamp) string {
	if t == nil {
		return ""
	}
	return t.AsTime().UTC().Format(time.RFC3339)
}

func toAppKey(k *adminv1.Key) *appKey {
	a := &appKey{ID: k.GetId(), Name: k.GetName(), Prefix: k.GetPrefix(), State: k.GetState(), Endpoints: k.GetAllowedEndpoints(), Models: k.GetAllowedModels(),
		BudgetSpent: k.GetBudgetSpent(), BudgetResetsAt: timeText(k.GetBudgetResetsAt()), ExpireTime: timeText(k.GetExpireTime()), CreateTime: timeText(k.GetCreateTime()),
		MaxRPS: k.GetMaxRequestsPerSecond(), MaxConcurrent: k.GetMaxConcurrentRequests(), MaxTPM: k.GetMaxTokensPerMinute(), Spend: "0"}
	if bd := k.GetBudget(); bd != nil {
		a.Budget = &appBudget{Amount: bd.GetAmount(), Period: bd.GetPeriod()}
	}
	return a
}

func windowStart(now time.Time) *timestamppb.Timestamp {
	return timestamppb.New(now.UTC().Truncate(24*time.Hour).AddDate(0, 0, 1-webAppDays))
}

// apiMe is the profile, the balance, the keys with their spend and the top-up terms.
func (b *Bot) apiMe(c *apiCall) (any, error) {
	ks, err := b.gw.admin.ListKeys(c.ctx, &adminv1.ListKeysRequest{ProfileId: c.profile.GetId()})
	if err != nil {
		return nil, err
	}
	sum, err := b.gw.admin.GetUsageSummary(c.ctx, &adminv1.GetUsageSummaryRequest{Id: c.profile.GetId(), GroupBy: []string{"key"}, StartTime: windowStart(time.Now())})
	if err != nil {
		return nil, err
	}
	spend := map[string]*adminv1.UsageSummaryRow{}
	for _, r := range sum.GetRows() {
		spend[r.GetKeyId()] = r
	}
	keys := []*appKey{}
	for _, k := range ks.GetKeys() {
		a := toAppKey(k)
		if r := spend[k.GetId()]; r != nil {
			a.Spend, a.Requests = r.GetCost(), r.GetRequests()
		}
		keys = append(keys, a)
	}
	// Active keys first, then by name.
	sort.SliceStable(keys, func(i, j int) bool {
		if (keys[i].State == keyActive) != (keys[j].State == keyActive) {
			return keys[i].State == keyActive
		}
		return keys[i].Name < keys[j].Name
	})
	avail := c.profile.GetAvailable()
	if avail == "" {
		avail = c.profile.GetBalance()
	}
	top := map[string]any{"enabled": b.topUpsOn()}
	if b.topUpsOn() {
		lo, hi := b.topUpBounds()
		top["min"], top["max"] = lo.String(), hi.String()
		if !b.cfg.StarsRate.IsZero() {
			top["stars_rate"] = b.cfg.StarsRate.String()
		}
	}
	return map[string]any{
		"user":    map[string]any{"id": c.user.ID, "name": c.user.name()},
		"profile": map[string]any{"id": c.profile.GetId(), "balance": c.profile.GetBalance(), "available": avail, "currency": c.profile.GetCurrency()},
		"keys":    keys,
		"topup":   top,
		"days":    webAppDays,
	}, nil
}

// apiUsage is the spend per day (every day of the window, zeros included) and per model over
// the last webAppDays days, of all the user's keys or of one (?key=<id>, the user's own).
func (b *Bot) apiUsage(c *apiCall) (any, error) {
	now := time.Now().UTC()
	req := &adminv1.GetUsageSummaryRequest{Id: c.profile.GetId(), GroupBy: []string{"day", "model"}, StartTime: windowStart(now)}
	if id := c.r.URL.Query().Get("key"); id != "" {
		k, err := b.gw.ownKey(c.ctx, c.profile.GetId(), id)
		if err != nil {
			return nil, err
		}
		if k == nil {
			return nil, refuse(http.StatusNotFound, "That is not one of your keys.")
		}
		req.KeyId = k.GetId()
	}
	sum, err := b.gw.admin.GetUsageSummary(c.ctx, req)
	if err != nil {
		return nil, err
	}
	type day struct {
		Day      string `json:"day"`
		Cost     string `json:"cost"`
		Requests int64  `json:"requests"`
	}
	type model struct {
		Model        string `json:"model"`
		Cost         string `json:"cost"`
		Requests     int64  `json:"requests"`
		InputTokens  int64  `json:"input_tokens"`
		OutputTokens int64  `json:"output_tokens"`
		cost         decimal.Decimal
	}
	dayCost := map[string]decimal.Decimal{}
	dayReq := map[string]int64{}
	byModel := map[string]*model{}
	total := decimal.Zero
	var requests int64
	for _, r := range sum.GetRows() {
		cost, err := decimal.NewFromString(r.GetCost())
		if err != nil {
			return nil, fmt.Errorf("usage summary cost %q: %w", r.GetCost(), err)
		}
		dayCost[r.GetDay()] = dayCost[r.GetDay()].Add(cost)
		dayReq[r.GetDay()] += r.GetRequests()
		m := byModel[r.GetModel()]
		if m == nil {
			m = &model{Model: r.GetModel()}
			byModel[r.GetModel()] = m
		}
		m.cost = m.cost.Add(cost)
		m.Requests += r.GetRequests()
		m.InputTokens += r.GetInputTokens()
		m.OutputTokens += r.GetOutputTokens()
		total = total.Add(cost)
		requests += r.GetRequests()
	}
	days := make([]day, 0, webAppDays)
	for d := req.GetStartTime().AsTime(); !d.After(now); d = d.AddDate(0, 0, 1) {
		k := d.Format("2006-01-02")
		days = append(days, day{Day: k, Cost: dayCost[k].String(), Requests: dayReq[k]})
	}
	mods := make([]*model, 0, len(byModel))
	for _, m := range byModel {
		m.Cost = m.cost.String()
		mods = append(mods, m)
	}
	sort.Slice(mods, func(i, j int) bool {
		if c := mods[i].cost.Cmp(mods[j].cost); c != 0 {
			return c > 0
		}
		return mods[i].Model < mods[j].Model
	})
	return map[string]any{"currency": c.profile.GetCurrency(), "key": req.GetKeyId(), "days": days, "models": mods, "total": total.String(), "requests": requests}, nil
}

// apiModels is the catalogue's models with their prices in the billing currency.
func (b *Bot) apiModels(c *apiCall) (any, error) {
	cat, err := b.gw.catalog.GetCatalog(c.ctx, &catalogv1.GetCatalogRequest{Currency: c.profile.GetCurrency()})
	if err != nil {
		return nil, err
	}
	type price struct {
		Endpoints []string          `json:"endpoint_families"`
		Mode      string            `json:"billing_mode"`
		Parts     map[string]string `json:"components"`
	}
	type model struct {
		ID     string  `json:"id"`
		Name   string  `json:"display_name"`
		Family string  `json:"family"`
		Prices []price `json:"prices"`
	}
	out := []model{}
	for _, f := range cat.GetFamilies() {
		for _, m := range f.GetModels() {
			mm := model{ID: m.GetId(), Name: m.GetDisplayName(), Family: f.GetId(), Prices: []price{}}
			for _, p := range m.GetPrices() {
				parts := map[string]string{}
				cs := p.GetComponents()
				for name, a := range map[string]*catalogv1.Amount{"input": cs.GetInput(), "cached input": cs.GetCachedInput(), "cache write": cs.GetCacheWrite(),
					"output": cs.GetOutput(), "audio input": cs.GetAudioInput(), "audio output": cs.GetAudioOutput(), "request": cs.GetRequest()} {
					if a != nil {
						parts[name] = a.GetAmount() + " " + unitText(a.GetUnit())
					}
				}
				mm.Prices = append(mm.Prices, price{Endpoints: p.GetEndpointFamilies(), Mode: p.GetBillingMode(), Parts: parts})
			}
			out = append(out, mm)
		}
	}
	return map[string]any{"currency": cat.GetCurrency(), "models": out}, nil
}

// apiCreateKey makes a key for every endpoint family and model, with the bot's limits, and
// returns its secret: the only time the page sees it.
func (b *Bot) apiCreateKey(c *apiCall) (any, error) {
	var in struct {
		Name string `json:"name"`
	}
	if err := decode(c.r, &in); err != nil {
		return nil, err
	}
	in.Name = strings.TrimSpace(in.Name)
	if in.Name == "" || len([]rune(in.Name)) > 64 {
		return nil, refuse(http.StatusBadRequest, "A key name has 1 to 64 characters.")
	}
	if !b.limits.allow(c.user.ID, "create") {
		return nil, refuse(http.StatusTooManyRequests, "Too many new keys in a short time; please wait a few minutes.")
	}
	resp, err := b.gw.admin.CreateKey(c.ctx, &adminv1.CreateKeyRequest{
		ProfileId: c.profile.GetId(), Name: in.Name, AllowedEndpoints: []string{"*"}, AllowedModels: []string{"*"},
		MaxConcurrentRequests: b.cfg.KeyLimits.MaxConcurrentRequests, MaxRequestsPerSecond: b.cfg.KeyLimits.MaxRequestsPerSecond,
		MaxTokensPerMinute: b.cfg.KeyLimits.MaxTokensPerMinute,
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"key": toAppKey(resp.GetKey()), "secret": resp.GetSecret(), "base_url": b.cfg.PublicBaseURL}, nil
}

// apiUpdateKey sets or removes a key's budget: {"budget": {"amount": "10", "period": "MONTH"}},
// or {"budget": null} to remove it.
func (b *Bot) apiUpdateKey(c *apiCall) (any, error) {
	k, err := b.pathKey(c)
	if err != nil {
		return nil, err
	}
	var in struct {
		Budget *appBudget `json:"budget"`
	}
	if err := decode(c.r, &in); err != nil {
		return nil, err
	}
	budget := &adminv1.Budget{Amount: "0"} // off
	if in.Budget != nil {
		amount, err := decimal.NewFromString(strings.TrimSpace(in.Budget.Amount))
		if err != nil || !amount.IsPositive() {
			return nil, refuse(http.StatusBadRequest, "The budget must be a positive number.")
		}
		period := strings.ToUpper(in.Budget.Period)
		switch period {
		case "DAY", "WEEK", "MONTH", "TOTAL":
		default:
			return nil, refuse(http.StatusBadRequest, "The period is DAY, WEEK, MONTH or TOTAL.")
		}
		budget = &adminv1.Budget{Amount: amount.String(), Period: period}
	}
	k, err = b.gw.admin.UpdateKey(c.ctx, &adminv1.UpdateKeyRequest{Key: &adminv1.Key{Id: k.GetId(), Budget: budget},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"budget"}}})
	if err != nil {
		return nil, err
	}
	return map[string]any{"key": toAppKey(k)}, nil
}

func (b *Bot) apiRevokeKey(c *apiCall) (any, error) {
	k, err := b.pathKey(c)
	if err != nil {
		return nil, err
	}
	k, err = b.gw.admin.RevokeKey(c.ctx, &adminv1.RevokeKeyRequest{Id: k.GetId()})
	if err != nil {
		return nil, err
	}
	return map[string]any{"key": toAppKey(k)}, nil
}

// apiRotateKey replaces a key by a new secret with the same policy; the old key is revoked,
// so a second call finds it revoked and cannot rotate twice.
func (b *Bot) apiRotateKey(c *apiCall) (any, error) {
	k, err := b.pathKey(c)
	if err != nil {
		return nil, err
	}
	if k.GetState() != keyActive {
		return nil, refuse(http.StatusConflict, "That key is already revoked.")
	}
	if !b.limits.allow(c.user.ID, "rotate") {
		return nil, refuse(http.StatusTooManyRequests, "Too many rotations in a short time; please wait a few minutes.")
	}
	resp, err := b.gw.admin.RotateKey(c.ctx, &adminv1.RotateKeyRequest{Id: k.GetId()})
	if status.Code(err) == codes.FailedPrecondition {
		return nil, refuse(http.StatusConflict, "That key is already revoked.")
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"key": toAppKey(resp.GetKey()), "secret": resp.GetSecret(), "base_url": b.cfg.PublicBaseURL}, nil
}

// apiTopUp makes an invoice link (createInvoiceLink) the page opens with openInvoice; the
// payment then comes to the bot as a successful_payment update like any other.
func (b *Bot) apiTopUp(c *apiCall) (any, error) {
	if !b.topUpsOn() {
		return nil, refuse(http.StatusConflict, "Top-ups through the bot are not enabled here.")
	}
	var in struct {
		Amount string `json:"amount"`
	}
	if err := decode(c.r, &in); err != nil {
		return nil, err
	}
	inv, why := b.invoiceFor(c.profile, in.Amount)
	if inv == nil {
		return nil, refuse(http.StatusBadRequest, "The amount must be %s.", why)
	}
	if !b.limits.allow(c.user.ID, "topup") {
		return nil, refuse(http.StatusTooManyRequests, "Too many invoices in a short time; please wait a few minutes.")
	}
	var link string
	err := b.tg.call(c.ctx, "createInvoiceLink", func(ctx context.Context) error {
		var err error
		link, err = b.tg.api.CreateInvoiceLink(ctx, &tgbot.CreateInvoiceLinkParams{
			Title: inv.Title, Description: inv.Description, Payload: inv.Payload, ProviderToken: inv.ProviderToken,
			Currency: inv.Currency, Prices: []models.LabeledPrice{{Label: "Top-up", Amount: inv.Price}},
		})
		return err
	})
	if err != nil {
		return nil, refuse(http.StatusBadGateway, "The invoice could not be made; please try again later.")
	}
	return map[string]any{"link": link, "currency": inv.Currency, "price": inv.Price, "credit": inv.Credit.String()}, nil
}
