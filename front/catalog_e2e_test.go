package front_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"modelgateway/core/gatewaytest"
)

const pricedCatalog = `{
  "currency": "RUB",
  "families": [{"id": "chat"}, {"id": "img"}],
  "providers": [{"id": "p", "kind": "simulator", "base_url": "http://127.0.0.1:1/v1"}],
  "models": [
    {"id": "m", "display_name": "M", "family": "chat", "output_token_limit": 16384,
     "routes": [{"endpoint_families": ["chat.completions", "responses", "messages.count_tokens"], "provider": "p"}],
     "prices": [{"endpoint_families": ["chat.completions", "responses"], "billing_mode": "per_token", "input": "15", "cached_input": "7.5", "output": "60"}],
     "capabilities": [{"endpoint_family": "chat.completions", "optional_parameters": ["temperature"], "verified_at": "2026-11-01T00:00:00Z"}]},
    {"id": "pic", "display_name": "Pic", "family": "img",
     "routes": [{"endpoint_families": ["images.generations"], "provider": "p"}],
     "prices": [{"endpoint_families": ["images.generations"], "billing_mode": "per_request", "request": "3"}]},
    {"id": "unpriced", "family": "chat", "routes": [{"endpoint_families": ["chat.completions"], "provider": "p"}]},
    {"id": "off", "family": "chat", "active": false,
     "routes": [{"endpoint_families": ["chat.completions"], "provider": "p"}],
     "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "1"}]}
  ]
}`

// TestMain: the package's end-to-end tests run the gateway binary on a throwaway PostgreSQL.
func TestMain(m *testing.M) { gatewaytest.Main(m) }

func TestPublicCatalog(t *testing.T) {
	t.Parallel()
	e := gatewaytest.Start(t, gatewaytest.Options{})
	e.Admin("POST", "/admin/v1/catalog:apply", pricedCatalog)

	status, hdr, cat := e.Do("GET", "/v1/catalog", nil, "")
	if status != 200 || hdr.Get("Cache-Control") != "public, max-age=60" || hdr.Get("ETag") == "" {
		t.Fatalf("catalog = %d %v %v", status, hdr, cat)
	}
	want := map[string]any{
		"currency": "RUB",
		"snapshot": map[string]any{"fetched_at": nil, "effective_date": nil, "fx_status": "unavailable"},
		"families": []any{
			map[string]any{"id": "chat", "models": []any{map[string]any{
				"id": "m", "display_name": "M", "endpoint_families": []any{"chat.completions", "responses"},
				"prices": []any{map[string]any{
					"endpoint_families": []any{"chat.completions", "responses"}, "billing_mode": "per_token",
					"components": map[string]any{
						"input":        map[string]any{"amount": "15", "unit": "RUB_per_1M_tokens"},
						"cached_input": map[string]any{"amount": "7.5", "unit": "RUB_per_1M_tokens"},
						"cache_write":  nil,
						"output":       map[string]any{"amount": "60", "unit": "RUB_per_1M_tokens"},
						"request":      nil,
					}}},
				"capabilities": []any{map[string]any{"endpoint_family": "chat.completions", "optional_parameters": []any{"temperature"}, "verified_at": "2026-11-01T00:00:00Z"}},
				// The output limit where clients look for it; absent without one (below).
				"max_tokens": float64(16384), "top_provider": map[string]any{"max_completion_tokens": float64(16384)},
			}}},
			map[string]any{"id": "img", "models": []any{map[string]any{
				"id": "pic", "display_name": "Pic", "endpoint_families": []any{"images.generations"},
				"prices": []any{map[string]any{
					"endpoint_families": []any{"images.generations"}, "billing_mode": "per_request",
					"components": map[string]any{"input": nil, "cached_input": nil, "cache_write": nil, "output": nil,
						"request": map[string]any{"amount": "3", "unit": "RUB_per_request"}},
				}},
				"capabilities": []any{},
				"top_provider": map[string]any{},
			}}},
		},
	}
	if diff := cmp.Diff(want, cat); diff != "" {
		t.Errorf("RUB catalogue without FX (-want +got):\n%s", diff)
	}

	// Without FX rates other currencies have null components, never RUB values.
	_, _, usd := e.Do("GET", "/v1/catalog?currency=USD", nil, "")
	comps := usd["families"].([]any)[0].(map[string]any)["models"].([]any)[0].(map[string]any)["prices"].([]any)[0].(map[string]any)["components"].(map[string]any)
	if comps["input"] != nil || usd["snapshot"].(map[string]any)["fx_status"] != "unavailable" {
		t.Errorf("USD without FX: %v %v", comps, usd["snapshot"])
	}

	fetched := time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)
	e.Admin("POST", "/admin/v1/fx:set", `{"effective_date":"2026-11-22","fetched_at":"`+fetched+`","rates":{"USD":"0.0105"}}`)
	_, _, usd = e.Do("GET", "/v1/catalog?currency=USD", nil, "")
	comps = usd["families"].([]any)[0].(map[string]any)["models"].([]any)[0].(map[string]any)["prices"].([]any)[0].(map[string]any)["components"].(map[string]any)
	if !cmp.Equal(comps["input"], map[string]any{"amount": "0.1575", "unit": "USD_per_1M_tokens"}) || usd["snapshot"].(map[string]any)["fx_status"] != "current" {
		t.Errorf("USD with fresh FX: %v %v", comps["input"], usd["snapshot"])
	}
	_, _, eur := e.Do("GET", "/v1/catalog?currency=EUR", nil, "")
	if c := eur["families"].([]any)[1].(map[string]any)["models"].([]any)[0].(map[string]any)["prices"].([]any)[0].(map[string]any)["components"].(map[string]any); c["request"] != nil {
		t.Errorf("EUR without an EUR rate must be null, got %v", c["request"])
	}
	e.Admin("POST", "/admin/v1/fx:set", `{"effective_date":"2026-11-19","fetched_at":"`+time.Now().Add(-37*time.Hour).UTC().Format(time.RFC3339)+`","rates":{"USD":"0.01"}}`)
	// The newest snapshot by fetched_at is still the fresh one.
	if _, _, c := e.Do("GET", "/v1/catalog?currency=USD", nil, ""); c["snapshot"].(map[string]any)["effective_date"] != "2026-11-22" {
		t.Errorf("older snapshot replaced the newer one: %v", c["snapshot"])
	}

	status, _, body := e.Do("GET", "/v1/catalog?currency=GBP", map[string]string{"X-Request-Id": "cat-1"}, "")
	if status != 400 || gatewaytest.Code(body) != "invalid_catalog_currency" || body["error"].(map[string]any)["request_id"] != "cat-1" {
		t.Errorf("GBP = %d %v", status, body)
	}
}

func TestCatalogRevalidatesWithETag(t *testing.T) {
	t.Parallel()
	e := gatewaytest.Start(t, gatewaytest.Options{})
	e.Admin("POST", "/admin/v1/catalog:apply", pricedCatalog)
	get := func(inm string) (int, string, []byte) { return gatewaytest.GetCatalog(t, e.Base, inm) }
	_, etag, first := get("")
	_, etag2, second := get("")
	if etag != etag2 || string(first) != string(second) {
		t.Fatalf("unchanged data gave different answers: %s vs %s", etag, etag2)
	}
	if status, _, b := get(etag); status != 304 || len(b) != 0 {
		t.Errorf("If-None-Match = %d %q, want 304", status, b)
	}
	e.Admin("POST", "/admin/v1/catalog:apply", `{"models":[{"id":"pic","family":"img","routes":[{"endpoint_families":["images.generations"],"provider":"p"}],"prices":[{"endpoint_families":["images.generations"],"billing_mode":"per_request","request":"4"}]}]}`)
	if status, newTag, _ := get(etag); status != 200 || newTag == etag {
		t.Errorf("after a price change: %d %s (old %s)", status, newTag, etag)
	}
}

// The public catalogue shows audio rates on the price sets that name them, and keeps the five
// components of spec 2.2 everywhere else.
func TestCatalogAudioComponents(t *testing.T) {
	g := gatewaytest.StartMedia(t, gatewaytest.Options{})
	status, _, cat := g.Do("GET", "/v1/catalog", nil, "")
	if status != 200 {
		t.Fatalf("catalog: %d", status)
	}
	seen := 0
	for _, f := range cat["families"].([]any) {
		for _, m := range f.(map[string]any)["models"].([]any) {
			mm := m.(map[string]any)
			comps := mm["prices"].([]any)[0].(map[string]any)["components"].(map[string]any)
			switch mm["id"] {
			case "rt":
				seen++
				if a, _ := comps["audio_input"].(map[string]any); a["amount"] != "800" || a["unit"] != "RUB_per_1M_tokens" {
					t.Errorf("rt audio_input = %v", comps["audio_input"])
				}
			case "dalle":
				seen++
				if _, ok := comps["audio_input"]; ok || len(comps) != 5 {
					t.Errorf("dalle components %v, want the five of spec 2.2", comps)
				}
			}
		}
	}
	if seen != 2 {
		t.Fatalf("found %d of the two models", seen)
	}
}
