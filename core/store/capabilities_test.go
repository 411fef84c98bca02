package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"modelgateway/core/catalog"
	"modelgateway/core/store"
)

const capabilityDoc = `
currency: RUB
families: [{id: fam}]
providers: [{id: p, kind: openai, base_url: "http://127.0.0.1:1/v1", api_key_env: K}]
models:
  - id: m
    display_name: M
    family: fam
    owned_by: x
    routes: [{endpoint_families: [chat.completions, messages], provider: p}]
    prices: [{endpoint_families: [chat.completions, messages], billing_mode: per_token, input: "1", output: "1"}]
`

func capabilities(t *testing.T, st *store.Store) map[string]store.Capability {
	t.Helper()
	d, err := st.LoadCatalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.Capability{}
	for _, c := range d.Capabilities {
		out[c.ModelID+"/"+c.EndpointFamily] = c
	}
	return out
}

func TestUpsertCapabilityRoundTrip(t *testing.T) {
	t.Parallel()
	st, _ := open(t)
	ctx := context.Background()
	doc, err := catalog.Parse([]byte(capabilityDoc))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyCatalog(ctx, doc); err != nil {
		t.Fatal(err)
	}
	t1 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)

	if err := st.UpsertCapability(ctx, "m", "chat.completions", []string{"temperature", "stop"}, t1); err != nil {
		t.Fatal(err)
	}
	// nil is a verified absence too: stored as an empty array, not NULL and not a missing row.
	if err := st.UpsertCapability(ctx, "m", "messages", nil, t1); err != nil {
		t.Fatal(err)
	}
	// A second verification replaces the first.
	if err := st.UpsertCapability(ctx, "m", "chat.completions", []string{"seed"}, t2); err != nil {
		t.Fatal(err)
	}
	got := capabilities(t, st)
	want := map[string]store.Capability{
		"m/chat.completions": {ModelID: "m", EndpointFamily: "chat.completions", OptionalParameters: []string{"seed"}, VerifiedAt: t2},
		"m/messages":         {ModelID: "m", EndpointFamily: "messages", OptionalParameters: []string{}, VerifiedAt: t1},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("capabilities (-want +got):\n%s", diff)
	}
	if got["m/messages"].OptionalParameters == nil {
		t.Error("the empty list came back as nil")
	}
	var isNull bool
	var n int
	if err := st.Pool.QueryRow(ctx, `SELECT optional_parameters IS NULL, coalesce(cardinality(optional_parameters), -1) FROM capabilities WHERE model_id = 'm' AND endpoint_family = 'messages'`).Scan(&isNull, &n); err != nil {
		t.Fatal(err)
	}
	if isNull || n != 0 {
		t.Errorf("stored empty list: NULL %v, cardinality %d; want an empty array", isNull, n)
	}

	if err := st.UpsertCapability(ctx, "gone", "messages", nil, t1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown model: err %v, want ErrNotFound", err)
	}
}
