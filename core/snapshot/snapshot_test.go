package snapshot

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"modelgateway/core/keys"
	"modelgateway/core/store"
)

func data() *store.CatalogData {
	h := func(s string) []byte { x := keys.Hash(s); return x[:] }
	return &store.CatalogData{
		Currency:  "RUB",
		Families:  []store.Family{{ID: "b", Position: 0, Active: true}, {ID: "a", Position: 1, Active: true}, {ID: "off", Position: 2, Active: false}},
		Providers: []store.Provider{{ID: "p", Active: true}, {ID: "dead", Active: false}},
		Models: []store.Model{
			{ID: "m2", Family: "a", Priority: 1, Active: true},
			{ID: "m1", Family: "a", Priority: 1, Active: true},
			{ID: "m0", Family: "a", Priority: 0, Active: true},
			{ID: "b1", Family: "b", Priority: 9, Active: true},
			{ID: "gone", Family: "a", Active: false},
			{ID: "orphan", Family: "off", Active: true},
			{ID: "deadroute", Family: "a", Active: true},
		},
		Routes: []store.Route{
			{ModelID: "m2", EndpointFamilies: []string{"chat.completions"}, ProviderID: "p"},
			{ModelID: "m1", EndpointFamilies: []string{"chat.completions", "messages"}, ProviderID: "p"},
			{ModelID: "m0", EndpointFamilies: []string{"embeddings"}, ProviderID: "p"},
			{ModelID: "b1", EndpointFamilies: []string{"chat.completions"}, ProviderID: "p"},
			{ModelID: "gone", EndpointFamilies: []string{"chat.completions"}, ProviderID: "p"},
			{ModelID: "orphan", EndpointFamilies: []string{"chat.completions"}, ProviderID: "p"},
			{ModelID: "deadroute", EndpointFamilies: []string{"chat.completions"}, ProviderID: "dead"},
		},
		Keys: []*store.Key{
			{ID: uuid.New(), SecretHash: h("wide"), AllowedEndpoints: []string{"*"}, AllowedModels: []string{"*"}, State: store.KeyActive},
			{ID: uuid.New(), SecretHash: h("chat"), AllowedEndpoints: []string{"chat.completions"}, AllowedModels: []string{"m1", "gone"}, State: store.KeyActive},
			{ID: uuid.New(), SecretHash: h("revoked"), AllowedEndpoints: []string{"*"}, AllowedModels: []string{"*"}, State: store.KeyRevoked},
		},
	}
}

func TestVisibleModelsOrderAndFilter(t *testing.T) {
	t.Parallel()
	s := Build(data(), time.Now())
	names := func(ms []*Model) []string {
		out := []string{}
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	wide, _ := s.Authenticate("wide")
	// Family order b before a; priority; equal priorities by id; inactive models, models of
	// inactive families and models whose only provider is inactive are left out.
	if diff := cmp.Diff([]string{"b1", "m0", "m1", "m2"}, names(s.VisibleModels(wide))); diff != "" {
		t.Errorf("wide (-want +got):\n%s", diff)
	}
	chat, _ := s.Authenticate("chat")
	if diff := cmp.Diff([]string{"m1"}, names(s.VisibleModels(chat))); diff != "" {
		t.Errorf("chat key (-want +got):\n%s", diff)
	}
	if _, err := s.Authenticate("revoked"); err == nil || err.Code != "invalid_key" {
		t.Errorf("revoked key authenticated: %v", err)
	}
	if _, err := s.Authenticate(""); err == nil || err.Code != "invalid_key" {
		t.Errorf("empty key authenticated: %v", err)
	}
}

func TestAuthorizeDecidesInSpecOrder(t *testing.T) {
	t.Parallel()
	s := Build(data(), time.Now())
	chat, _ := s.Authenticate("chat")
	wide, _ := s.Authenticate("wide")
	cases := []struct {
		name, family, model, want string
		key                       *Key
	}{
		{"allowed", "chat.completions", "m1", "", chat},
		{"family outside the key's list wins over everything", "messages", "nope", "endpoint_not_allowed", chat},
		{"unknown model", "chat.completions", "nope", "model_not_found", chat},
		{"inactive model is not found even when granted", "chat.completions", "gone", "model_not_found", chat},
		{"existing model not granted", "chat.completions", "m2", "model_not_allowed", chat},
		{"model not served on the family", "messages", "m2", "model_not_found", wide},
		{"model of an inactive family", "chat.completions", "orphan", "model_not_found", wide},
		{"model whose provider is inactive", "chat.completions", "deadroute", "model_not_found", wide},
	}
	for _, tc := range cases {
		_, err := s.Authorize(tc.key, tc.family, tc.model)
		got := ""
		if err != nil {
			got = err.Code
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
