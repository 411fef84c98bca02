package front_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/simulator"
	"modelgateway/core/store/storetest"
)

// snapshotOf reads the catalogue's FX block in a currency.
func snapshotOf(t *testing.T, e *gatewaytest.Gateway, cur string) (map[string]any, map[string]any) {
	t.Helper()
	status, _, cat := e.Do("GET", "/v1/catalog?currency="+cur, nil, "")
	if status != 200 {
		t.Fatalf("catalog %s: %d %v", cur, status, cat)
	}
	comps := cat["families"].([]any)[0].(map[string]any)["models"].([]any)[0].(map[string]any)["prices"].([]any)[0].(map[string]any)["components"].(map[string]any)
	return cat["snapshot"].(map[string]any), comps
}

// Spec 2.2: rates fetched more than 36 h ago are still used but shown as stale; a newer fetch
// within 36 h is current again.
func TestCatalogFxStaleAfter36Hours(t *testing.T) {
	t.Parallel()
	e := gatewaytest.Start(t, gatewaytest.Options{})
	e.Admin("POST", "/admin/v1/catalog:apply", pricedCatalog)
	at := func(ago time.Duration) string { return time.Now().Add(-ago).UTC().Format(time.RFC3339) }

	e.Admin("POST", "/admin/v1/fx:set", `{"effective_date":"2026-11-19","fetched_at":"`+at(37*time.Hour)+`","rates":{"USD":"0.01"}}`)
	snap, comps := snapshotOf(t, e, "USD")
	if snap["fx_status"] != "stale" || snap["effective_date"] != "2026-11-19" {
		t.Errorf("37 h old rates: %v, want stale", snap)
	}
	if !cmp.Equal(comps["input"], map[string]any{"amount": "0.15", "unit": "USD_per_1M_tokens"}) {
		t.Errorf("stale rates must still convert: input %v", comps["input"])
	}
	// The billing currency needs no rate, but the block still describes the rates in use.
	if snap, _ := snapshotOf(t, e, "RUB"); snap["fx_status"] != "stale" {
		t.Errorf("RUB catalogue: %v", snap)
	}

	e.Admin("POST", "/admin/v1/fx:set", `{"effective_date":"2026-11-20","fetched_at":"`+at(35*time.Hour)+`","rates":{"USD":"0.02"}}`)
	snap, comps = snapshotOf(t, e, "USD")
	if snap["fx_status"] != "current" || snap["effective_date"] != "2026-11-20" {
		t.Errorf("35 h old rates: %v, want current", snap)
	}
	if !cmp.Equal(comps["input"], map[string]any{"amount": "0.3", "unit": "USD_per_1M_tokens"}) {
		t.Errorf("newer rates: input %v", comps["input"])
	}
}

// Two replicas on one database publish the same bytes under the same ETag, so a client (or a
// cache in front) revalidates against either; a change applied on one reaches the other, and
// both agree again on a new ETag.
func TestCatalogETagIsEqualOnTwoReplicas(t *testing.T) {
	t.Parallel()
	db := storetest.DatabaseURL(t)
	a := gatewaytest.Start(t, gatewaytest.Options{DatabaseURL: db})
	a.Admin("POST", "/admin/v1/catalog:apply", pricedCatalog)
	b := gatewaytest.Start(t, gatewaytest.Options{DatabaseURL: db})
	_, tagA, bodyA := gatewaytest.GetCatalog(t, a.Base, "")
	_, tagB, bodyB := gatewaytest.GetCatalog(t, b.Base, "")
	if tagA == "" || tagA != tagB || string(bodyA) != string(bodyB) {
		t.Fatalf("replicas disagree: %s vs %s\n%s\n%s", tagA, tagB, bodyA, bodyB)
	}
	if status, _, _ := gatewaytest.GetCatalog(t, b.Base, tagA); status != 304 {
		t.Errorf("replica B revalidating A's ETag: %d, want 304", status)
	}

	a.Admin("POST", "/admin/v1/catalog:apply", strings.Replace(pricedCatalog, `"request": "3"`, `"request": "4"`, 1))
	_, newA, _ := gatewaytest.GetCatalog(t, a.Base, "")
	if newA == tagA {
		t.Fatal("a price change kept the ETag")
	}
	// B learns of the change by notification; wait for it with a generous bound.
	deadline := time.Now().Add(20 * time.Second)
	for {
		status, newB, _ := gatewaytest.GetCatalog(t, b.Base, tagA)
		if status == 200 && newB == newA {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica B still answers %d %s, want 200 %s", status, newB, newA)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// capCatalog has one model with a capability entry whose parameter list the test replaces.
const capCatalog = `{
  "currency": "RUB",
  "families": [{"id": "fam"}],
  "providers": [{"id": "up", "kind": "openai", "base_url": "{{UP}}/v1", "api_key_env": "UP_KEY"}],
  "models": [{"id": "m-cap", "family": "fam", "routes": [{"endpoint_families": ["chat.completions"], "provider": "up", "upstream_model": "up-gpt"}],
    "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "1", "output": "1"}],
    "capabilities": [{"endpoint_family": "chat.completions", "optional_parameters": [{{PARAMS}}], "verified_at": "{{AT}}"}]}]
}`

// Applying a catalogue whose capability entry names other parameters replaces the entry: the
// public catalogue shows the new list and requests are checked against it, on the replica
// that applied it at once.
func TestApplyingACatalogueReplacesCapabilities(t *testing.T) {
	g := &gatewaytest.Gen{Up: gatewaytest.StartUpstream(t, simulator.Options{}), Gateway: gatewaytest.Start(t, gatewaytest.Options{})}
	apply := func(params, at string) {
		doc := strings.NewReplacer("{{UP}}", g.Up.URL, "{{PARAMS}}", params, "{{AT}}", at).Replace(capCatalog)
		g.Admin("POST", "/admin/v1/catalog:apply", doc)
	}
	chat := func(param string) (int, string) {
		status, _, raw := g.Post("/v1/chat/completions", nil, `{"model":"m-cap","max_tokens":3,`+param+`,"messages":[{"role":"user","content":"hi"}]}`)
		if status == 200 {
			return status, ""
		}
		code, _, _ := gatewaytest.Envelope(t, raw)
		return status, code
	}
	apply(`"temperature", "max_tokens"`, "2026-11-01T00:00:00Z")
	g.Key, g.ProfileID = g.NewProfile("caps", "100")
	if status, code := chat(`"temperature":0.5`); status != 200 {
		t.Fatalf("temperature while verified: %d %s", status, code)
	}
	if status, code := chat(`"top_p":0.5`); status != 400 || code != "invalid_request_error" {
		t.Fatalf("top_p while not verified: %d %s", status, code)
	}

	apply(`"top_p", "max_tokens"`, "2026-11-20T00:00:00Z")
	if status, code := chat(`"top_p":0.5`); status != 200 {
		t.Errorf("top_p after the new entry: %d %s", status, code)
	}
	if status, code := chat(`"temperature":0.5`); status != 400 || code != "invalid_request_error" {
		t.Errorf("temperature after the entry dropped it: %d %s", status, code)
	}
	_, _, cat := g.Do("GET", "/v1/catalog", nil, "")
	caps := cat["families"].([]any)[0].(map[string]any)["models"].([]any)[0].(map[string]any)["capabilities"].([]any)
	want := []any{map[string]any{"endpoint_family": "chat.completions", "optional_parameters": []any{"top_p", "max_tokens"}, "verified_at": "2026-11-20T00:00:00Z"}}
	if diff := cmp.Diff(want, caps); diff != "" {
		t.Errorf("catalogue capabilities (-want +got):\n%s", diff)
	}
}
