package gatewaytest

import (
	"testing"

	"github.com/google/uuid"
)

// PolicyCatalog covers the discovery rules: family order differs from id order, equal priorities,
// an inactive model, ids with "/" and ":", a model served only on content families, an
// explicit output limit on one of them.
const PolicyCatalog = `{
  "currency": "RUB",
  "families": [{"id": "zeta"}, {"id": "alpha"}],
  "providers": [{"id": "p1", "kind": "simulator", "base_url": "http://127.0.0.1:1/v1"}],
  "models": [
    {"id": "b-model", "display_name": "B", "family": "alpha", "owned_by": "acme", "priority": 5,
     "routes": [{"endpoint_families": ["chat.completions", "responses"], "provider": "p1"}],
     "prices": [{"endpoint_families": ["chat.completions", "responses"], "billing_mode": "per_token", "input": "1", "output": "2"}]},
    {"id": "a-model", "display_name": "A", "family": "alpha", "owned_by": "acme", "priority": 5,
     "routes": [{"endpoint_families": ["chat.completions"], "provider": "p1"}],
     "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "1", "output": "2"}]},
    {"id": "org/z-model:v1", "display_name": "Z", "family": "zeta", "owned_by": "zorg", "priority": 99,
     "routes": [{"endpoint_families": ["chat.completions", "messages"], "provider": "p1"}],
     "prices": [{"endpoint_families": ["chat.completions", "messages"], "billing_mode": "per_token", "input": "1", "output": "2"}]},
    {"id": "gem", "display_name": "Gem Pro", "family": "zeta", "owned_by": "g", "priority": 1, "output_token_limit": 8192,
     "routes": [{"endpoint_families": ["content.generate", "content.count_tokens"], "provider": "p1"}],
     "prices": [{"endpoint_families": ["content.generate"], "billing_mode": "per_token", "input": "1", "output": "2"}]},
    {"id": "gem-embed", "family": "zeta", "owned_by": "g", "priority": 2,
     "routes": [{"endpoint_families": ["content.embed"], "provider": "p1"}],
     "prices": [{"endpoint_families": ["content.embed"], "billing_mode": "per_token", "input": "1"}]},
    {"id": "retired", "family": "alpha", "owned_by": "acme", "priority": 0, "active": false,
     "routes": [{"endpoint_families": ["chat.completions"], "provider": "p1"}],
     "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "1", "output": "2"}]}
  ]
}`

// Fixture is a profile with 100.000000001 of credit, a key for everything (Wide) and a key for
// chat.completions and content.generate on a-model, gem and org/z-model:v1 (Narrow).
type Fixture struct {
	ProfileID        string
	Wide, Narrow     string
	WideID, NarrowID string
}

// Admin is a gateway's admin HTTP routes, for Setup.
type Admin interface {
	Admin(method, path, body string) map[string]any
}

// Setup applies PolicyCatalog and makes the Fixture.
func Setup(t testing.TB, e Admin) Fixture {
	t.Helper()
	e.Admin("POST", "/admin/v1/catalog:apply", PolicyCatalog)
	p := e.Admin("POST", "/admin/v1/profiles", `{"display_name":"Ann","external_ref":"tg:`+uuid.NewString()+`"}`)
	pid := p["id"].(string)
	e.Admin("POST", "/admin/v1/profiles/"+pid+":credit", `{"amount":"100.000000001","reason":"topup","idempotency_key":"c1"}`)
	wide := e.Admin("POST", "/admin/v1/profiles/"+pid+"/keys", `{"name":"wide","allowed_endpoints":["*"],"allowed_models":["*"]}`)
	narrow := e.Admin("POST", "/admin/v1/profiles/"+pid+"/keys", `{"name":"narrow","allowed_endpoints":["chat.completions","content.generate"],"allowed_models":["a-model","gem","org/z-model:v1"]}`)
	return Fixture{
		ProfileID: pid,
		Wide:      wide["secret"].(string), WideID: wide["key"].(map[string]any)["id"].(string),
		Narrow: narrow["secret"].(string), NarrowID: narrow["key"].(map[string]any)["id"].(string),
	}
}
