package snapshot

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"modelgateway/core/store"
)

// Prices and capabilities land on their own model; rows of a model the catalogue does not
// have are dropped, not attached to a neighbour or panicking.
func TestBuildAttachesPricesAndCapabilitiesToTheirModel(t *testing.T) {
	t.Parallel()
	d := data()
	d.Prices = []store.Price{
		{ModelID: "m1", EndpointFamilies: []string{"chat.completions"}, BillingMode: "per_token"},
		{ModelID: "m1", EndpointFamilies: []string{"messages"}, BillingMode: "per_request"},
		{ModelID: "ghost", EndpointFamilies: []string{"chat.completions"}, BillingMode: "per_token"},
	}
	d.Capabilities = []store.Capability{
		{ModelID: "m1", EndpointFamily: "chat.completions", OptionalParameters: []string{"temperature"}},
		{ModelID: "ghost", EndpointFamily: "chat.completions"},
	}
	s := Build(d, time.Now())
	m1 := s.Model("m1")
	if len(m1.Prices) != 2 || m1.Prices[1].BillingMode != "per_request" {
		t.Errorf("m1 prices %+v", m1.Prices)
	}
	if c, ok := m1.Capabilities["chat.completions"]; !ok || len(c.OptionalParameters) != 1 || len(m1.Capabilities) != 1 {
		t.Errorf("m1 capabilities %+v", m1.Capabilities)
	}
	if m2 := s.Model("m2"); len(m2.Prices) != 0 || len(m2.Capabilities) != 0 {
		t.Errorf("m2 got another model's rows: %+v %+v", m2.Prices, m2.Capabilities)
	}
	if s.Model("ghost") != nil {
		t.Error("a price row created a model")
	}
	if got := m1.EndpointFamilies([]string{"messages", "embeddings", "chat.completions"}); len(got) != 2 || got[0] != "messages" || got[1] != "chat.completions" {
		t.Errorf("m1 families in the given order: %v", got)
	}
}

// A single lookup follows the list: the model must be active and visible to the key, on the
// requested families when some are given.
func TestVisibleModel(t *testing.T) {
	t.Parallel()
	s := Build(data(), time.Now())
	chat, _ := s.Authenticate("chat")
	wide, _ := s.Authenticate("wide")
	cases := []struct {
		name     string
		key      *Key
		id       string
		families []string
		visible  bool
	}{
		{"granted and served", chat, "m1", nil, true},
		{"granted, served on a requested family", chat, "m1", []string{"messages", "chat.completions"}, true},
		{"granted, but not on the requested family", chat, "m1", []string{"messages"}, false},
		{"not granted", chat, "m2", nil, false},
		{"granted but inactive", chat, "gone", nil, false},
		{"unknown", wide, "nope", nil, false},
		{"served only on a family the key lacks", chat, "m0", nil, false},
		{"wide key, embeddings model", wide, "m0", []string{"embeddings"}, true},
	}
	for _, c := range cases {
		m, err := s.VisibleModel(c.key, c.id, c.families...)
		if c.visible && (err != nil || m == nil || m.ID != c.id) {
			t.Errorf("%s: %v %v", c.name, m, err)
		}
		if !c.visible && (err == nil || err.Code != "model_not_found" || m != nil) {
			t.Errorf("%s: visible (%v)", c.name, err)
		}
	}
	if len(s.ActiveModels()) != 5 { // b1, m0, m1, m2 and deadroute (active, routed nowhere)
		t.Errorf("%d active models, want 5", len(s.ActiveModels()))
	}
}

// A key's id texts, made when the snapshot is built, are its ids' String.
func TestKeyIDTexts(t *testing.T) {
	t.Parallel()
	s := Build(data(), time.Now())
	for _, secret := range []string{"chat", "wide"} {
		k, err := s.Authenticate(secret)
		if err != nil {
			t.Fatal(err)
		}
		if k.IDText() != k.ID.String() || k.ProfileText() != k.ProfileID.String() {
			t.Errorf("%s: %q %q, want %q %q", secret, k.IDText(), k.ProfileText(), k.ID, k.ProfileID)
		}
	}
	bare := &Key{ID: uuid.New(), ProfileID: uuid.New()} // not from Build
	if bare.IDText() != bare.ID.String() || bare.ProfileText() != bare.ProfileID.String() {
		t.Errorf("a key made by hand: %q %q", bare.IDText(), bare.ProfileText())
	}
}
