package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"modelgateway/core/catalog"
)

// The routing fields (migration 0014) are stored and loaded as the document gave them; a
// provider and routes without them load as before: one credential, one attempt, priority =
// position, weight 1. Re-applying a document without them clears them.
func TestCatalogRoutingFieldsRoundTrip(t *testing.T) {
	st, _ := open(t)
	ctx := context.Background()
	apply := func(doc string) {
		t.Helper()
		d, err := catalog.Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.ApplyCatalog(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	const withFields = `
currency: RUB
families: [{id: f}]
providers:
  - {id: pool, kind: openai, base_url: "https://h/v1", api_key_env: [KEY_A, KEY_B], retry: {attempts: 3, backoff: 250ms}, cooldown: 45s}
  - {id: one, kind: openai, base_url: "https://h/v1", api_key_env: KEY_C}
models:
  - id: m
    family: f
    routes:
      - {endpoint_families: [chat.completions], provider: one}
      - {endpoint_families: [chat.completions], provider: pool, priority: 0, weight: 3}
`
	apply(withFields)
	d, err := st.LoadCatalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%+v %+v %+v %+v", d.Providers[0].KeyEnvs(), d.Providers[1].KeyEnvs(), d.Routes[0], d.Routes[1])
	pool := d.Providers[1]
	if pool.ID != "pool" || pool.RetryAttempts != 3 || pool.RetryBackoff != 250*time.Millisecond || pool.Cooldown != 45*time.Second ||
		fmt.Sprint(pool.KeyEnvs()) != "[KEY_A KEY_B]" || pool.APIKeyEnv != "KEY_A" {
		t.Errorf("pool provider %+v", pool)
	}
	if one := d.Providers[0]; one.APIKeyPool != nil || one.RetryAttempts != 0 || one.Cooldown != 0 {
		t.Errorf("single provider %+v", one)
	}
	if r0, r1 := d.Routes[0], d.Routes[1]; r0.Priority != 0 || r0.Weight != 1 || r1.Priority != 0 || r1.Weight != 3 {
		t.Errorf("routes: %s", got)
	}
	// Without the fields: priority is the position again, weight 1, the pool and retry gone.
	apply(`
providers:
  - {id: pool, kind: openai, base_url: "https://h/v1", api_key_env: KEY_A}
models:
  - id: m
    family: f
    routes:
      - {endpoint_families: [chat.completions], provider: one}
      - {endpoint_families: [chat.completions], provider: pool}
`)
	if d, err = st.LoadCatalog(ctx); err != nil {
		t.Fatal(err)
	}
	if pool := d.Providers[1]; pool.APIKeyPool != nil || pool.RetryAttempts != 0 || pool.Cooldown != 0 {
		t.Errorf("pool provider after a plain document %+v", pool)
	}
	if r1 := d.Routes[1]; r1.Priority != 1 || r1.Weight != 1 {
		t.Errorf("second route after a plain document %+v, want priority 1 (its position), weight 1", r1)
	}
}
