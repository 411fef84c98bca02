package admin_test

import (
	"context"
	"strings"
	"testing"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/store"
	"modelgateway/core/store/storetest"
)

// A provider whose api_key_env is not set is named when the catalogue is applied and when a
// replica starts, instead of surfacing later as a 502; providers with their key are not.
func TestUnsetProviderKeysAreWarnedAbout(t *testing.T) {
	t.Parallel()
	db := storetest.DatabaseURL(t)
	// MISSING_KEY empty whatever the test's own environment holds: empty is unset.
	env := []string{"HAVE_KEY=sk-real", "MISSING_KEY="}
	e := gatewaytest.Start(t, gatewaytest.Options{DatabaseURL: db, Env: env})
	doc := `{"families":[{"id":"f"}],"providers":[
	  {"id":"with-key","kind":"openai","base_url":"http://127.0.0.1:1/v1","api_key_env":"HAVE_KEY"},
	  {"id":"without-key","kind":"anthropic","base_url":"http://127.0.0.1:1","api_key_env":"MISSING_KEY"}],
	  "models":[{"id":"m","family":"f","routes":[{"endpoint_families":["chat.completions"],"provider":"without-key"}]}]}`
	resp := e.Admin("POST", "/admin/v1/catalog:apply", doc)
	ws, _ := resp["warnings"].([]any)
	if len(ws) != 1 || !strings.Contains(ws[0].(string), "without-key") || !strings.Contains(ws[0].(string), "MISSING_KEY") {
		t.Fatalf("apply warnings %v, want one naming without-key and MISSING_KEY", resp["warnings"])
	}

	// A second replica on the database: its start-up log, which comes before it serves.
	g := gatewaytest.Start(t, gatewaytest.Options{Name: "second", DatabaseURL: db, Env: env})
	out := g.Log()
	if !strings.Contains(out, `"level":"WARN"`) || !strings.Contains(out, "MISSING_KEY") || strings.Contains(out, "HAVE_KEY") {
		t.Errorf("start-up log does not warn about exactly the unset key:\n%s", out)
	}
}

// A catalogue may not name one of the gateway's own variables as a provider's key: its value
// would be sent to the provider's base_url. The whole document is refused with 400 naming
// the provider and the variable, never the value, and nothing of it is applied.
func TestCatalogNamingAGatewayVariableIsRefused(t *testing.T) {
	t.Parallel()
	e := gatewaytest.Start(t, gatewaytest.Options{Env: []string{"HAVE_KEY=sk-real"}})
	doc := func(keyEnv, model string) string {
		return `{"families":[{"id":"f"}],"providers":[
		  {"id":"up","kind":"openai","base_url":"http://127.0.0.1:1/v1","api_key_env":"` + keyEnv + `"}],
		  "models":[{"id":"` + model + `","family":"f","routes":[{"endpoint_families":["chat.completions"],"provider":"up"}]}]}`
	}
	// The same document with a provider's own variable is applied.
	e.Admin("POST", "/admin/v1/catalog:apply", doc("HAVE_KEY", "m1"))

	for _, name := range []string{"GATEWAY_ADMIN_TOKEN", "DATABASE_URL", "PGPASSWORD", "TELEGRAM_BOT_TOKEN"} {
		status, _, out := e.Do("POST", "/admin/v1/catalog:apply", map[string]string{"Authorization": "Bearer " + gatewaytest.AdminToken}, doc(name, "m2"))
		errObj, _ := out["error"].(map[string]any)
		msg, _ := errObj["message"].(string)
		if status != 400 || gatewaytest.Code(out) != "invalid_request_error" || !strings.Contains(msg, name) || !strings.Contains(msg, `"up"`) {
			t.Fatalf("api_key_env %s: %d %v, want 400 invalid_request_error naming up and %s", name, status, out, name)
		}
		if strings.Contains(msg, gatewaytest.AdminToken) {
			t.Fatalf("the refusal shows the admin token's value: %q", msg)
		}
	}
	cat, err := (&store.Store{Pool: e.Pool()}).LoadCatalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Providers) != 1 || cat.Providers[0].APIKeyEnv != "HAVE_KEY" || len(cat.Models) != 1 || cat.Models[0].ID != "m1" {
		t.Fatalf("after the refusals the catalogue holds %+v and %d models, want only the first document", cat.Providers, len(cat.Models))
	}
}
