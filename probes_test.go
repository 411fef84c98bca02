package main

import (
	"bytes"
	"context"
	"modelgateway/core/gatewaytest"
	"testing"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"modelgateway/core/provider"
	"modelgateway/core/provider/openai"
	"modelgateway/core/simulator"
	"modelgateway/core/store/storetest"
	"modelgateway/core/verify"
	"modelgateway/front/verifycli"
)

// Capability probes run on the operator's credentials: however many calls they make upstream,
// no profile is charged and no request is recorded. A client request after them is the one
// charge and the one record (so the check is not passing on an empty ledger).
func TestCapabilityProbesAreNeverCharged(t *testing.T) {
	t.Parallel()
	up := gatewaytest.StartUpstream(t, simulator.Options{Words: 3})
	e := startGateway(t, storetest.DatabaseURL(t), adminToken, func(c *Config) {
		c.Env = func(string) string { return upstreamKey }
	})
	if e.g.Admin.Verifier == nil {
		e.g.Admin.Verifier = &verify.Prober{Adapters: map[string]provider.Adapter{"openai": openai.Adapter{}}, Env: func(string) string { return upstreamKey }}
	}
	e.admin("POST", "/admin/v1/catalog:apply", `{"currency":"RUB","families":[{"id":"f"}],
		"providers":[{"id":"oa","kind":"openai","base_url":"`+up.URL+`/v1","api_key_env":"PROBE_KEY"}],
		"models":[{"id":"pm","family":"f","routes":[{"endpoint_families":["chat.completions"],"provider":"oa"}],
			"prices":[{"endpoint_families":["chat.completions"],"billing_mode":"per_token","input":"1000","output":"1000"}]}]}`)
	p := e.admin("POST", "/admin/v1/profiles", `{"display_name":"P","external_ref":"tg:`+uuid.NewString()+`"}`)
	pid := p["id"].(string)
	e.admin("POST", "/admin/v1/profiles/"+pid+":credit", `{"amount":"10","reason":"t","idempotency_key":"p1"}`)
	key := e.admin("POST", "/admin/v1/profiles/"+pid+"/keys", `{"name":"k","allowed_endpoints":["*"],"allowed_models":["*"]}`)["secret"].(string)

	var out bytes.Buffer
	if err := verifycli.Run(context.Background(), []string{"-addr", e.base, "-models", "pm"}, &out, adminToken); err != nil {
		t.Fatal(err)
	}
	probes := len(up.Calls())
	if probes < 2 {
		t.Fatalf("verification made %d upstream calls; the test needs the probes to have run", probes)
	}

	status, hdr, body := e.do("POST", "/v1/chat/completions", bearer(key), `{"model":"pm","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 || hdr.Get("X-Request-Cost") == "" {
		t.Fatalf("client request: %d %v", status, body)
	}
	cost := decimal.RequireFromString(hdr.Get("X-Request-Cost"))
	g := &genEnv{env: e}
	if bal := g.settled(t, pid, 1); !bal.Equal(decimal.NewFromInt(10).Sub(cost)) {
		t.Errorf("balance %s, want 10 - %s", bal, cost)
	}
	var charges, records int
	if err := e.g.Store.Pool.QueryRow(context.Background(),
		`SELECT (SELECT count(*) FROM ledger_entries WHERE kind = 'charge'), (SELECT count(*) FROM requests)`).Scan(&charges, &records); err != nil {
		t.Fatal(err)
	}
	if charges != 1 || records != 1 {
		t.Errorf("after %d probe calls and one request: %d charges and %d request records in the whole database, want 1 and 1", probes, charges, records)
	}
}
