package rpc

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"modelgateway/core/billing"
	"modelgateway/core/keys"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/store/storetest"
	"modelgateway/core/wire/apierror"
)

func price(families []string, mode string, fields map[string]string) store.Price {
	p := store.Price{EndpointFamilies: families, BillingMode: mode}
	set := map[string]*decimal.NullDecimal{"input": &p.Input, "output": &p.Output, "request": &p.Request,
		"cached": &p.CachedInput, "write": &p.CacheWrite, "audio_in": &p.AudioInput, "audio_out": &p.AudioOutput}
	for k, v := range fields {
		*set[k] = decimal.NewNullDecimal(decimal.RequireFromString(v))
	}
	return p
}

// holdSnapshot is a catalogue of models on chat.completions with the given prices (one rule
// each, nil: no price), and a key for all of them or for some.
func holdSnapshot(t *testing.T, prices map[string]*store.Price, allowed ...string) (*snapshot.Snapshot, *snapshot.Key) {
	t.Helper()
	d := &store.CatalogData{Currency: "RUB", Families: []store.Family{{ID: "fam", Active: true}},
		Providers: []store.Provider{{ID: "up", Kind: "openai", Active: true}}}
	for id, p := range prices {
		d.Models = append(d.Models, store.Model{ID: id, Family: "fam", Active: true})
		d.Routes = append(d.Routes, store.Route{ModelID: id, EndpointFamilies: []string{"chat.completions", "messages.count_tokens", "content.count_tokens"}, ProviderID: "up"})
		if p != nil {
			pp := *p
			pp.ModelID = id
			d.Prices = append(d.Prices, pp)
		}
	}
	if len(allowed) == 0 {
		allowed = []string{"*"}
	}
	h := keys.Hash("sk-test")
	d.Keys = []*store.Key{{ID: uuid.New(), ProfileID: uuid.New(), SecretHash: h[:], State: store.KeyActive,
		AllowedEndpoints: []string{"*"}, AllowedModels: allowed}}
	snap := snapshot.Build(d, time.Now())
	k, apiErr := snap.Authenticate("sk-test")
	if apiErr != nil {
		t.Fatal(apiErr)
	}
	return snap, k
}

func TestSmallestHoldOfARoute(t *testing.T) {
	t.Parallel()
	chat := []string{"chat.completions"}
	perToken := func(in, out string) *store.Price {
		p := price(chat, "per_token", map[string]string{"input": in, "output": out})
		return &p
	}
	perRequest := func(r string) *store.Price {
		p := price(chat, "per_request", map[string]string{"request": r})
		return &p
	}
	dearInput := price(chat, "per_token", map[string]string{"input": "1", "output": "5", "cached": "3", "write": "2", "audio_in": "1"})
	noOutput := price(chat, "per_token", map[string]string{"input": "2"})
	// A catalogue may price the counting families by mistake: they stay free (the spec: token counting changes no balance).
	counting := price([]string{"chat.completions", "messages.count_tokens", "content.count_tokens"}, "per_token", map[string]string{"input": "3", "output": "1"})
	cases := []struct {
		name    string
		prices  map[string]*store.Price
		allowed []string
		family  string
		model   string // "" : the route names none
		want    string
	}{
		{"64 input tokens of an empty body at the input rate, no output", map[string]*store.Price{"a": perToken("1000000", "99")}, nil, "chat.completions", "a", "64"},
		{"the dearest input rate counts, as in the hold", map[string]*store.Price{"a": &dearInput}, nil, "chat.completions", "a", "0.000192"},
		{"a per-request price is the request price", map[string]*store.Price{"a": perRequest("0.5")}, nil, "chat.completions", "a", "0.5"},
		{"a rule without an output price still bounds the other routes", map[string]*store.Price{"a": &noOutput}, nil, "chat.completions", "a", "0.000128"},
		{"without a model, the cheapest usable model", map[string]*store.Price{"a": perToken("3", "1"), "b": perToken("2", "9"), "c": perToken("5", "0")}, nil, "chat.completions", "", "0.000128"},
		{"without a model, only models the key may use", map[string]*store.Price{"a": perToken("3", "1"), "b": perToken("1", "1")}, []string{"a"}, "chat.completions", "", "0.000192"},
		{"a model with no price leaves it to the body", map[string]*store.Price{"a": perToken("3", "1"), "b": nil}, nil, "chat.completions", "", "0"},
		{"a free model leaves it to the body", map[string]*store.Price{"a": perToken("3", "1"), "b": perToken("0", "1")}, nil, "chat.completions", "", "0"},
		{"the named model alone, not a free neighbour", map[string]*store.Price{"a": perToken("3", "1"), "b": perToken("0", "1")}, nil, "chat.completions", "a", "0.000192"},
		{"no model serves the family", map[string]*store.Price{"a": perToken("3", "1")}, nil, "embeddings", "", "0"},
		{"messages token counting needs a positive balance", map[string]*store.Price{"a": &counting}, nil, "messages.count_tokens", "", "0.000000001"},
		{"content token counting needs a positive balance", map[string]*store.Price{"a": &counting}, nil, "content.count_tokens", "a", "0.000000001"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			snap, k := holdSnapshot(t, c.prices, c.allowed...)
			var m *snapshot.Model
			if c.model != "" {
				m = snap.Model(c.model)
			}
			if got := smallestHold(snap, k, c.family, m); !got.Equal(decimal.RequireFromString(c.want)) {
				t.Errorf("smallest hold %s, want %s", got, c.want)
			}
			var memo memoHolds
			for i := range 2 { // worked out, then from the memo
				if got := memo.smallest(snap, k, c.family, m); !got.Equal(decimal.RequireFromString(c.want)) {
					t.Errorf("memoised smallest hold (call %d) %s, want %s", i, got, c.want)
				}
			}
		})
	}
}

// The memo of smallest holds belongs to one snapshot: a price change is seen at once, and
// without a named model each key has its own.
func TestSmallestHoldMemoFollowsSnapshotAndKey(t *testing.T) {
	t.Parallel()
	chat := []string{"chat.completions"}
	cheap := price(chat, "per_token", map[string]string{"input": "1000000", "output": "1"})
	dear := price(chat, "per_token", map[string]string{"input": "2000000", "output": "1"})
	var memo memoHolds
	old, k := holdSnapshot(t, map[string]*store.Price{"a": &cheap})
	if got := memo.smallest(old, k, "chat.completions", old.Model("a")); !got.Equal(decimal.NewFromInt(64)) {
		t.Fatalf("before the change: %s, want 64", got)
	}
	changed, k2 := holdSnapshot(t, map[string]*store.Price{"a": &dear})
	if got := memo.smallest(changed, k2, "chat.completions", changed.Model("a")); !got.Equal(decimal.NewFromInt(128)) {
		t.Fatalf("after the price change: %s, want 128", got)
	}

	// Two keys of one snapshot: one may use both models, the other only the dear one.
	d := &store.CatalogData{Currency: "RUB", Families: []store.Family{{ID: "fam", Active: true}},
		Providers: []store.Provider{{ID: "up", Kind: "openai", Active: true}}}
	for id, p := range map[string]store.Price{"a": cheap, "b": dear} {
		d.Models = append(d.Models, store.Model{ID: id, Family: "fam", Active: true})
		d.Routes = append(d.Routes, store.Route{ModelID: id, EndpointFamilies: chat, ProviderID: "up"})
		p.ModelID = id
		d.Prices = append(d.Prices, p)
	}
	for secret, allowed := range map[string]string{"sk-wide": "*", "sk-narrow": "b"} {
		h := keys.Hash(secret)
		d.Keys = append(d.Keys, &store.Key{ID: uuid.New(), ProfileID: uuid.New(), SecretHash: h[:], State: store.KeyActive,
			AllowedEndpoints: []string{"*"}, AllowedModels: []string{allowed}})
	}
	snap := snapshot.Build(d, time.Now())
	for _, c := range []struct {
		secret string
		want   int64
	}{{"sk-wide", 64}, {"sk-narrow", 128}, {"sk-wide", 64}} {
		k, apiErr := snap.Authenticate(c.secret)
		if apiErr != nil {
			t.Fatal(apiErr)
		}
		if got := memo.smallest(snap, k, "chat.completions", nil); !got.Equal(decimal.NewFromInt(c.want)) {
			t.Errorf("%s without a model: %s, want %d", c.secret, got, c.want)
		}
	}
}

// checkBalance asks the ledger: a profile that can pay the smallest hold passes (and the hold
// is given back: the whole balance stays available), one that cannot is insufficient_balance.
func TestCheckBalanceBeforeTheBody(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, storetest.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ledger := billing.NewLedger(st, nil)
	s := &CoreServer{Store: st, Deps: &Deps{Ledger: ledger}}
	p := price([]string{"chat.completions", "messages.count_tokens"}, "per_token", map[string]string{"input": "1000000", "output": "1"})
	snap, k := holdSnapshot(t, map[string]*store.Price{"a": &p})
	prof, err := st.CreateProfile(ctx, "P", "")
	if err != nil {
		t.Fatal(err)
	}
	k.ProfileID = prof.ID

	check := func() error { return s.checkBalance(ctx, snap, k, "chat.completions", snap.Model("a")) }
	var ae *apierror.Error
	if err := check(); !errors.As(err, &ae) || ae.Code != apierror.InsufficientBalance {
		t.Fatalf("an empty balance: %v, want insufficient_balance", err)
	}
	if _, err := st.CreditProfile(ctx, prof.ID, decimal.NewFromInt(63), "topup", "c1"); err != nil {
		t.Fatal(err)
	}
	if err := check(); !errors.As(err, &ae) || ae.Code != apierror.InsufficientBalance {
		t.Fatalf("63 for a smallest hold of 64: %v, want insufficient_balance", err)
	}
	if _, err := st.CreditProfile(ctx, prof.ID, decimal.NewFromInt(1), "topup", "c2"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := check(); err != nil {
			t.Fatalf("check %d with 64 for a smallest hold of 64: %v", i, err)
		}
	}
	// Given back: a request may hold the whole balance after the checks.
	h, err := ledger.Hold(ctx, prof.ID, decimal.NewFromInt(64))
	if err != nil {
		t.Fatalf("holding the whole balance after the checks: %v", err)
	}
	if _, err := ledger.Hold(ctx, prof.ID, decimal.New(1, -9)); !errors.Is(err, billing.ErrInsufficient) {
		t.Fatalf("a hold beyond the balance: %v", err)
	}
	// A free route needs a positive available balance: refused while the hold takes it all,
	// served once it is given back.
	if err := s.checkBalance(ctx, snap, k, "messages.count_tokens", nil); !errors.As(err, &ae) || ae.Code != apierror.InsufficientBalance {
		t.Fatalf("token counting with nothing available: %v, want insufficient_balance", err)
	}
	ledger.Finish(h, store.RequestRecord{ProfileID: prof.ID, RequestID: "held", KeyID: k.ID, Model: "a", EndpointFamily: "chat.completions", Status: "ok", Currency: "RUB"})
	if err := s.checkBalance(ctx, snap, k, "messages.count_tokens", nil); err != nil {
		t.Fatalf("token counting with the balance available: %v", err)
	}
}
