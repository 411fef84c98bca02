package status

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	catalogv1 "modelgateway/gen/gateway/catalog/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
)

// catalogue answers as core does: RUB by default, USD and EUR converted, CNY without a rate
// (the price is left out), anything else refused with invalid_catalog_currency.
type catalogue struct{ asked *[]string }

func (c catalogue) GetCatalog(_ context.Context, req *catalogv1.GetCatalogRequest, _ ...grpc.CallOption) (*catalogv1.Catalog, error) {
	if c.asked != nil {
		*c.asked = append(*c.asked, req.GetCurrency())
	}
	cur := req.GetCurrency()
	if cur == "" {
		cur = "RUB"
	}
	amounts := map[string][2]string{"RUB": {"120", "480"}, "USD": {"1.5", "6"}, "EUR": {"1.38", "5.52"}}
	a, ok := amounts[cur]
	if cur != "CNY" && !ok {
		return nil, apistatus.ToStatus(apierror.New(apierror.InvalidCatalogCurrency, "currency %q is not one of RUB, USD, EUR, CNY", cur), "")
	}
	amt := func(v, unit string) *catalogv1.Amount {
		if !ok {
			return nil
		}
		return &catalogv1.Amount{Amount: v, Unit: cur + unit}
	}
	return &catalogv1.Catalog{Currency: cur,
		Snapshot: &catalogv1.Snapshot{FetchedAt: tsAt(-3600e9), EffectiveDate: wrapperspb.String("2026-11-24"), FxStatus: "current"},
		Families: []*catalogv1.Family{
			{Id: "openai", Models: []*catalogv1.Model{{
				Id: "gpt-x", DisplayName: "GPT X", EndpointFamilies: []string{"chat.completions", "responses"}, MaxTokens: proto.Uint32(128000),
				Prices: []*catalogv1.Price{{EndpointFamilies: []string{"chat.completions", "responses"}, BillingMode: "tokens",
					Components: &catalogv1.Components{Input: amt(a[0], "_per_1M_tokens"), Output: amt(a[1], "_per_1M_tokens")}}},
				Capabilities: []*catalogv1.Capability{{EndpointFamily: "chat.completions", OptionalParameters: []string{"temperature", "max_tokens"}, VerifiedAt: tsAt(-24 * 3600e9)}},
			}}},
			{Id: "anthropic", Models: []*catalogv1.Model{{
				Id: "org/claude-y", DisplayName: "Claude Y", EndpointFamilies: []string{"messages"},
				Prices: []*catalogv1.Price{{EndpointFamilies: []string{"messages"}, BillingMode: "per_request", Components: &catalogv1.Components{Request: amt("0.01", "_per_request")}}},
			}}},
		}}, nil
}

func modelsServer(t *testing.T, asked *[]string) *httptest.Server {
	t.Helper()
	h, err := New(Config{Status: fixed{fixture()}, Catalog: catalogue{asked}, BaseURL: "https://gw.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// /models shows every public model of the catalogue with its family, endpoint families,
// prices per category in the currency asked for, the FX status, the output limit, the
// verified parameters and a link to its row of the compatibility matrix.
func TestModelsPageShowsTheCatalogueInTheChosenCurrency(t *testing.T) {
	t.Parallel()
	var asked []string
	srv := modelsServer(t, &asked)
	for _, tc := range []struct {
		query       string
		want, never []string
	}{
		{"", []string{`<h2 id="family-openai-h">openai</h2>`, `<h2 id="family-anthropic-h">anthropic</h2>`,
			"GPT X <code>gpt-x</code>", "Claude Y <code>org/claude-y</code>",
			"<td>Input</td><td class=\"num\">120 RUB per 1M tokens</td>", "<td>Output</td><td class=\"num\">480 RUB per 1M tokens</td>",
			"<td>Per request</td><td class=\"num\">0.01 RUB per request</td>",
			`<a class="pill" href="/models?currency=RUB" aria-current="page">RUB</a>`,
			`<span class="fx-current">current</span> (rates for 2026-11-24, fetched 2026-11-24 11:00 UTC)`,
			"Output limit: 128 000 tokens", "Output limit: none set",
			`<code>chat.completions</code>, <code>responses</code>`,
			`<td>temperature, max_tokens</td><td>2026-11-23 12:00 UTC</td>`,
			`<th scope="row"><code>responses</code></th><td class="unknown">unknown, passed through</td>`,
			`href="/status#model-gpt-x"`, `href="/status#model-org/claude-y"`,
		}, []string{"USD per"}},
		{"?currency=USD", []string{"1.5 USD per 1M tokens", "6 USD per 1M tokens", "0.01 USD per request",
			`<a class="pill" href="/models?currency=USD" aria-current="page">USD</a>`, "2 public models"}, []string{"RUB per"}},
		{"?currency=cny", []string{"not available in CNY without exchange rates", "GPT X", "Claude Y"}, []string{"CNY per"}},
	} {
		resp, body := get(t, srv.URL+"/models"+tc.query)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || resp.Header.Get("Content-Security-Policy") != CSP {
			t.Fatalf("/models%s: %d %s", tc.query, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		page := html.UnescapeString(string(body))
		for _, w := range tc.want {
			if !strings.Contains(page, w) {
				t.Errorf("/models%s lacks %q", tc.query, w)
			}
		}
		for _, n := range tc.never {
			if strings.Contains(page, n) {
				t.Errorf("/models%s shows %q", tc.query, n)
			}
		}
		if tc.query == "" {
			golden(t, "models.golden.html", body)
		}
	}
	if strings.Join(asked, ",") != ",USD,CNY" {
		t.Errorf("currencies asked of core: %q, want the default, USD and CNY", asked)
	}
}

// A currency the catalogue does not have is the spec's invalid_catalog_currency, as on
// /v1/catalog, with the request id; without a catalogue the page is unavailable, never empty.
func TestModelsPageRefusesAnUnknownCurrency(t *testing.T) {
	t.Parallel()
	var asked []string
	srv := modelsServer(t, &asked)
	resp, body := get(t, srv.URL+"/models?currency=USD")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("USD: %d", resp.StatusCode)
	}
	resp, body = get(t, srv.URL+"/models?currency=XYZ")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"code":"invalid_catalog_currency"`) ||
		!strings.Contains(string(body), resp.Header.Get("X-Request-Id")) {
		t.Errorf("XYZ: %d %s", resp.StatusCode, body)
	}
	if len(asked) != 1 {
		t.Errorf("core asked %q; an unknown currency is refused before", asked)
	}
	h, err := New(Config{Status: fixed{fixture()}, BaseURL: "https://gw.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/models", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), `"code":"unavailable"`) {
		t.Errorf("without a catalogue: %d %s", rec.Code, rec.Body)
	}
}
