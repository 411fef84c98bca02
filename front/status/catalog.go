package status

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	catalogv1 "modelgateway/gen/gateway/catalog/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
)

// GET /models: the public catalogue of GET /v1/catalog as a page (contract.md, "more public
// paths"). The numbers are the catalogue's own, converted by core with the same FX rates;
// the page only lays them out, so the page and the JSON cannot disagree.

// currencies are the catalogue's currencies (spec 2.2), in the order the page offers them.
// Core checks the choice; this list only draws the links.
var currencies = []string{"RUB", "USD", "EUR", "CNY"}

type catalogView struct {
	BaseURL, Currency string
	Currencies        []currencyLink
	FxStatus, FxNote  string
	Families          []familyView
	Models            int
}

type currencyLink struct {
	Code, Href string
	Current    bool
}

type familyView struct {
	ID     string
	Models []catModelView
}

type catModelView struct {
	ID, DisplayName, OutputLimit, StatusHref string
	EndpointFamilies                         []string
	Prices                                   []priceView
	Capabilities                             []capView
}

type priceView struct {
	EndpointFamilies []string
	BillingMode      string
	Rows             []priceRow
}

type priceRow struct{ Category, Amount string }

type capView struct {
	EndpointFamily, Params, VerifiedAt string
	Verified                           bool
}

// amount writes a catalogue amount for people: "0.15 USD per 1M tokens".
func amount(a *catalogv1.Amount) string {
	return a.GetAmount() + " " + strings.ReplaceAll(a.GetUnit(), "_", " ")
}

func priceRows(c *catalogv1.Components) []priceRow {
	var rows []priceRow
	for _, p := range []struct {
		name string
		a    *catalogv1.Amount
	}{
		{"Input", c.GetInput()}, {"Cached input", c.GetCachedInput()}, {"Cache write", c.GetCacheWrite()},
		{"Output", c.GetOutput()}, {"Audio input", c.GetAudioInput()}, {"Audio output", c.GetAudioOutput()},
		{"Per request", c.GetRequest()},
	} {
		if p.a != nil {
			rows = append(rows, priceRow{p.name, amount(p.a)})
		}
	}
	return rows
}

func catalogData(cat *catalogv1.Catalog, base string) catalogView {
	v := catalogView{BaseURL: base, Currency: cat.GetCurrency(), FxStatus: cat.GetSnapshot().GetFxStatus()}
	for _, c := range currencies {
		v.Currencies = append(v.Currencies, currencyLink{Code: c, Href: "/models?currency=" + c, Current: c == v.Currency})
	}
	snap := cat.GetSnapshot()
	switch {
	case snap.GetFetchedAt() == nil:
		v.FxNote = "no exchange rates yet: prices are shown only in the billing currency"
	default:
		v.FxNote = "rates for " + snap.GetEffectiveDate().GetValue() + ", fetched " + when(snap.GetFetchedAt())
	}
	for _, f := range cat.GetFamilies() {
		fv := familyView{ID: f.GetId()}
		for _, m := range f.GetModels() {
			mv := catModelView{ID: m.GetId(), DisplayName: m.GetDisplayName(), EndpointFamilies: m.GetEndpointFamilies(),
				OutputLimit: "none set: the upstream's own", StatusHref: "/status#model-" + m.GetId()}
			if m.MaxTokens != nil {
				mv.OutputLimit = groupDigits(m.GetMaxTokens()) + " tokens"
			}
			for _, p := range m.GetPrices() {
				mv.Prices = append(mv.Prices, priceView{EndpointFamilies: p.GetEndpointFamilies(),
					BillingMode: strings.ReplaceAll(p.GetBillingMode(), "_", " "), Rows: priceRows(p.GetComponents())})
			}
			caps := map[string]*catalogv1.Capability{}
			for _, c := range m.GetCapabilities() {
				caps[c.GetEndpointFamily()] = c
			}
			for _, ef := range m.GetEndpointFamilies() {
				cv := capView{EndpointFamily: ef, Params: "unknown, passed through"}
				if c, ok := caps[ef]; ok {
					cv.Verified, cv.Params = true, "none"
					if ps := c.GetOptionalParameters(); len(ps) > 0 {
						cv.Params = strings.Join(ps, ", ")
					}
					if c.GetVerifiedAt() != nil {
						cv.VerifiedAt = when(c.GetVerifiedAt())
					}
				}
				mv.Capabilities = append(mv.Capabilities, cv)
			}
			fv.Models = append(fv.Models, mv)
			v.Models++
		}
		v.Families = append(v.Families, fv)
	}
	return v
}

// groupDigits writes 128000 as 128 000: a limit is read at a glance.
func groupDigits(n uint32) string {
	s := strconv.FormatUint(uint64(n), 10)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ' ')
		}
		out = append(out, s[i])
	}
	return string(out)
}

var errNoCatalog = errors.New("no catalogue client configured")

func (h *Handler) catalog(w http.ResponseWriter, r *http.Request) {
	cur := strings.ToUpper(strings.TrimSpace(r.URL.Query().Get("currency")))
	if cur != "" && !slices.Contains(currencies, cur) {
		h.fail(w, http.StatusBadRequest, apierror.InvalidCatalogCurrency, "currency must be one of RUB, USD, EUR, CNY")
		return
	}
	if h.cfg.Catalog == nil {
		h.unavailable(w, errNoCatalog)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	cat, err := h.cfg.Catalog.GetCatalog(ctx, &catalogv1.GetCatalogRequest{Currency: cur})
	if err != nil {
		if e := apistatus.FromError(err); e.Code == apierror.InvalidCatalogCurrency {
			h.fail(w, http.StatusBadRequest, e.Code, e.Message)
			return
		}
		h.unavailable(w, err)
		return
	}
	h.render(w, "models.html", catalogData(cat, h.cfg.BaseURL))
}
