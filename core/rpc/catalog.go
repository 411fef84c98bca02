package rpc

import (
	"context"
	"slices"
	"time"

	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	catalogv1 "modelgateway/gen/gateway/catalog/v1"

	"modelgateway/core/catalog"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// FX status values of spec 2.2.
const (
	FxCurrent     = "current"
	FxStale       = "stale"
	FxUnavailable = "unavailable"
)

// CatalogServer publishes the public catalogue from the snapshot.
type CatalogServer struct {
	catalogv1.UnimplementedCatalogServiceServer
	Snapshots *snapshot.Holder
	// FxFreshFor is how long after fetched_at rates count as current (default 36 h).
	FxFreshFor time.Duration
	Now        func() time.Time
}

// GetCatalog implements GET /v1/catalog.
func (s *CatalogServer) GetCatalog(_ context.Context, req *catalogv1.GetCatalogRequest) (*catalogv1.Catalog, error) {
	cur := req.GetCurrency()
	if cur == "" {
		cur = "RUB"
	}
	if !slices.Contains(catalog.Currencies, cur) {
		return nil, apierror.New(apierror.InvalidCatalogCurrency, "currency %q is not one of RUB, USD, EUR, CNY", cur)
	}
	snap := s.Snapshots.Current()
	out := &catalogv1.Catalog{Currency: cur, Snapshot: &catalogv1.Snapshot{FxStatus: FxUnavailable}, Families: []*catalogv1.Family{}}
	// rate converts an amount in the billing currency; nil when it cannot be converted.
	var rate *decimal.Decimal
	if cur == snap.Currency {
		one := decimal.NewFromInt(1)
		rate = &one
	}
	if fx := snap.Fx; fx != nil {
		out.Snapshot.FetchedAt = timestamppb.New(fx.FetchedAt)
		out.Snapshot.EffectiveDate = wrapperspb.String(fx.EffectiveDate.Format(time.DateOnly))
		out.Snapshot.FxStatus = FxCurrent
		fresh := s.FxFreshFor
		if fresh == 0 {
			fresh = 36 * time.Hour
		}
		now := time.Now
		if s.Now != nil {
			now = s.Now
		}
		if now().Sub(fx.FetchedAt) > fresh {
			out.Snapshot.FxStatus = FxStale
		}
		if r, ok := fx.Rates[cur]; ok && rate == nil {
			rate = &r
		}
	}
	models := map[string][]*catalogv1.Model{}
	for _, m := range snap.ActiveModels() {
		if cm := catalogModel(m, cur, rate); cm != nil {
			models[m.Family] = append(models[m.Family], cm)
		}
	}
	for _, f := range snap.Families {
		if ms := models[f.ID]; len(ms) > 0 {
			out.Families = append(out.Families, &catalogv1.Family{Id: f.ID, Models: ms})
		}
	}
	return out, nil
}

// catalogModel lists a model with the families it is both served and priced on; a model with
// none is not public.
func catalogModel(m *snapshot.Model, cur string, rate *decimal.Decimal) *catalogv1.Model {
	priced := map[string]bool{}
	for _, p := range m.Prices {
		for _, f := range p.EndpointFamilies {
			priced[f] = true
		}
	}
	cm := &catalogv1.Model{Id: m.ID, DisplayName: m.DisplayName, EndpointFamilies: []string{}, Prices: []*catalogv1.Price{}, Capabilities: []*catalogv1.Capability{}}
	for _, f := range m.EndpointFamilies(catalog.EndpointFamilies) {
		if priced[f] {
			cm.EndpointFamilies = append(cm.EndpointFamilies, f)
		}
	}
	if len(cm.EndpointFamilies) == 0 {
		return nil
	}
	catalogLimits(cm, m) // models.go
	for _, p := range m.Prices {
		cm.Prices = append(cm.Prices, catalogPrice(p, cur, rate))
	}
	for _, f := range catalog.EndpointFamilies {
		if c, ok := m.Capabilities[f]; ok {
			cm.Capabilities = append(cm.Capabilities, &catalogv1.Capability{
				EndpointFamily: f, OptionalParameters: append([]string{}, c.OptionalParameters...), VerifiedAt: timestamppb.New(c.VerifiedAt),
			})
		}
	}
	return cm
}

func catalogPrice(p store.Price, cur string, rate *decimal.Decimal) *catalogv1.Price {
	amount := func(d decimal.NullDecimal, unit string) *catalogv1.Amount {
		if !d.Valid || rate == nil {
			return nil // not priced, or not convertible: never a value in another currency
		}
		return &catalogv1.Amount{Amount: d.Decimal.Mul(*rate).Round(9).String(), Unit: cur + unit}
	}
	const perTokens, perRequest = "_per_1M_tokens", "_per_request"
	return &catalogv1.Price{
		EndpointFamilies: append([]string{}, p.EndpointFamilies...),
		BillingMode:      p.BillingMode,
		Components: &catalogv1.Components{
			Input: amount(p.Input, perTokens), CachedInput: amount(p.CachedInput, perTokens),
			CacheWrite: amount(p.CacheWrite, perTokens), Output: amount(p.Output, perTokens),
			Request:    amount(p.Request, perRequest),
			AudioInput: amount(p.AudioInput, perTokens), AudioOutput: amount(p.AudioOutput, perTokens),
		},
	}
}
