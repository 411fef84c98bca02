package admin_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"modelgateway/core/gatewaytest"
)

func TestAdminAPI(t *testing.T) {
	t.Parallel()
	e := gatewaytest.Start(t, gatewaytest.Options{})
	f := gatewaytest.Setup(t, e)
	auth := map[string]string{"Authorization": "Bearer " + gatewaytest.AdminToken}

	// A replayed credit credits once; the same key with another amount is refused.
	for range 2 {
		e.Admin("POST", "/admin/v1/profiles/"+f.ProfileID+":credit", `{"amount":"0.5","reason":"bonus","idempotency_key":"bonus-1"}`)
	}
	p := e.Admin("GET", "/admin/v1/profiles/"+f.ProfileID, "")
	if p["balance"] != "100.500000001" {
		t.Errorf("balance after replayed credit = %v, want 100.500000001", p["balance"])
	}
	status, _, body := e.Do("POST", "/admin/v1/profiles/"+f.ProfileID+":credit", auth, `{"amount":"7","idempotency_key":"bonus-1"}`)
	if status != 409 {
		t.Errorf("credit replay with another amount = %d %v, want 409", status, body)
	}
	if _, sum, _ := gatewaytest.LedgerOf(t, e.Pool(), f.ProfileID); sum.String() != "100.500000001" {
		t.Errorf("ledger invariant: sum(entries) = %v, balance 100.500000001", sum)
	}

	// external_ref is unique and can be looked up.
	ref := "tg:" + uuid.NewString()
	e.Admin("POST", "/admin/v1/profiles", `{"display_name":"X","external_ref":"`+ref+`"}`)
	status, _, body = e.Do("POST", "/admin/v1/profiles", auth, `{"display_name":"Y","external_ref":"`+ref+`"}`)
	if status != 409 || gatewaytest.Code(body) != "already_exists" {
		t.Errorf("duplicate external_ref = %d %v", status, body)
	}
	if got := e.Admin("GET", "/admin/v1/profiles:lookup?external_ref="+ref, ""); got["display_name"] != "X" {
		t.Errorf("lookup = %v", got)
	}

	// Keys list without secrets, with a recognisable prefix.
	list := e.Admin("GET", "/admin/v1/profiles/"+f.ProfileID+"/keys", "")
	raw, _ := json.Marshal(list)
	if strings.Contains(string(raw), f.Wide) || strings.Contains(string(raw), "secret") {
		t.Errorf("ListKeys leaks a secret: %s", raw)
	}
	k0 := list["keys"].([]any)[0].(map[string]any)
	if pre := k0["prefix"].(string); !strings.HasPrefix(f.Wide, pre) || len(pre) >= len(f.Wide)/2 {
		t.Errorf("prefix %q of %q", pre, f.Wide)
	}

	// PATCH with a flat body changes only the fields present.
	k := e.Admin("PATCH", "/admin/v1/keys/"+f.NarrowID, `{"allowed_models":["b-model"]}`)
	if !cmp.Equal(k["allowed_models"], []any{"b-model"}) || k["name"] != "narrow" || !cmp.Equal(k["allowed_endpoints"], []any{"chat.completions", "content.generate"}) {
		t.Errorf("patched key = %v", k)
	}
	_, _, models := e.Do("GET", "/v1/models", gatewaytest.Bearer(f.Narrow), "")
	if diff := cmp.Diff([]string{"b-model"}, gatewaytest.IDs(t, models, "data", "id")); diff != "" {
		t.Errorf("policy change not in force on this replica (-want +got):\n%s", diff)
	}
	status, _, body = e.Do("PATCH", "/admin/v1/keys/"+f.NarrowID, auth, `{"allowed_endpoints":["chat.completion"]}`)
	if status != 400 || !strings.Contains(body["error"].(map[string]any)["message"].(string), "allowed_endpoints[0]") {
		t.Errorf("bad family in policy = %d %v", status, body)
	}

	// Rotate: the old secret stops working, the new one works with the same policy.
	rot := e.Admin("POST", "/admin/v1/keys/"+f.WideID+":rotate", `{}`)
	if s, _, _ := e.Do("GET", "/v1/models", gatewaytest.Bearer(f.Wide), ""); s != 401 {
		t.Errorf("rotated-away key answered %d", s)
	}
	if s, _, _ := e.Do("GET", "/v1/models", gatewaytest.Bearer(rot["secret"].(string)), ""); s != 200 {
		t.Errorf("rotated key answered %d", s)
	}
	// Revoke.
	rk := e.Admin("POST", "/admin/v1/keys/"+f.NarrowID+":revoke", `{}`)
	if rk["state"] != "REVOKED" {
		t.Errorf("revoked key state = %v", rk["state"])
	}
	if s, _, _ := e.Do("GET", "/v1/balance", gatewaytest.Bearer(f.Narrow), ""); s != 401 {
		t.Errorf("revoked key answered %d", s)
	}

	// A bad catalog document is refused naming the field, and changes nothing.
	status, _, body = e.Do("POST", "/admin/v1/catalog:apply", auth, `{"models":[{"id":"q","family":"alpha","prices":[{"endpoint_families":["chat.completions"],"billing_mode":"per_token","input":"1,5"}]}]}`)
	if status != 400 || !strings.Contains(fmt.Sprint(body), "models[0].prices[0].input") {
		t.Errorf("bad catalog = %d %v", status, body)
	}
	if s, _, _ := e.Do("GET", "/v1/models/q", gatewaytest.Bearer(rot["secret"].(string)), ""); s != 404 {
		t.Errorf("refused catalog still created model q: %d", s)
	}

	// FX rates.
	fx := e.Admin("POST", "/admin/v1/fx:set", `{"effective_date":"2026-11-20","fetched_at":"2026-11-20T09:00:00Z","rates":{"USD":"0.0105","EUR":"0.0098"}}`)
	if fx["rates"].(map[string]any)["USD"] != "0.0105" {
		t.Errorf("fx = %v", fx)
	}
	status, _, _ = e.Do("POST", "/admin/v1/fx:set", auth, `{"effective_date":"2026-11-20","fetched_at":"2026-11-20T09:00:00Z","rates":{"GBP":"1"}}`)
	if status != 400 {
		t.Errorf("unknown fx currency = %d", status)
	}
	if u := e.Admin("GET", "/admin/v1/profiles/"+f.ProfileID+"/usage", ""); u["records"] == nil {
		t.Errorf("usage = %v", u)
	}
}

func TestAdminAPIIsOffWithoutToken(t *testing.T) {
	t.Parallel()
	e := gatewaytest.Start(t, gatewaytest.Options{Env: []string{"GATEWAY_ADMIN_TOKEN="}})
	status, _, body := e.Do("POST", "/admin/v1/profiles", map[string]string{"Authorization": "Bearer anything"}, `{}`)
	if status != 404 || gatewaytest.Code(body) != "not_found" {
		t.Errorf("admin with no token configured = %d %v", status, body)
	}
}
