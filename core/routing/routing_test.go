package routing

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"modelgateway/core/provider"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
)

func TestRoutesYieldsTheFamilysRoutesInFallbackOrder(t *testing.T) {
	t.Parallel()
	m := &snapshot.Model{Model: store.Model{ID: "m"}, Routes: []store.Route{
		{EndpointFamilies: []string{"embeddings"}, ProviderID: "emb"},
		{EndpointFamilies: []string{"chat.completions", "responses"}, ProviderID: "a"},
		{EndpointFamilies: []string{"chat.completions"}, ProviderID: "b"},
	}}
	snap := &snapshot.Snapshot{Providers: map[string]*store.Provider{"emb": {ID: "emb"}, "a": {ID: "a"}, "b": {ID: "b"}}}
	var got []string
	for r, p := range Routes(snap, m, "chat.completions") {
		if r.ProviderID != p.ID {
			t.Errorf("route of %s came with provider %s", r.ProviderID, p.ID)
		}
		got = append(got, p.ID)
	}
	if diff := cmp.Diff([]string{"a", "b"}, got); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
	if first := First(m, "chat.completions"); first == nil || first.ProviderID != "a" {
		t.Errorf("First = %+v, want the route of a", first)
	}
	if first := First(m, "messages"); first != nil {
		t.Errorf("First of an unrouted family = %+v, want nil", first)
	}
}

func TestUpstreamTakesTheCredentialFromTheEnvironmentAndDefaultsTheModelName(t *testing.T) {
	t.Parallel()
	m := &snapshot.Model{Model: store.Model{ID: "public"}}
	p := &store.Provider{BaseURL: "http://up", APIKeyEnv: "ROUTING_TEST_KEY"}
	env := func(name string) string { return map[string]string{"ROUTING_TEST_KEY": "sk-routing-test"}[name] }
	tests := []struct {
		name  string
		route store.Route
		want  string
	}{
		{"a route without an upstream name sends the public one", store.Route{}, "public"},
		{"a route's upstream name is sent as is", store.Route{UpstreamModel: "dated-2025"}, "dated-2025"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u := Upstream(m, p, &tc.route, env)
			if u.UpstreamModel != tc.want || u.PublicModel != "public" || u.APIKey != "sk-routing-test" || u.BaseURL != "http://up" {
				t.Errorf("Upstream = %+v", u)
			}
		})
	}
}

// A provider stored before the catalogue refused the gateway's own variables may still name
// one; its value must not be sent, while a provider's own variable still is.
func TestUpstreamNeverSendsAGatewayVariable(t *testing.T) {
	t.Parallel()
	m := &snapshot.Model{Model: store.Model{ID: "m"}}
	env := func(name string) string {
		return map[string]string{"OPENAI_API_KEY": "sk-provider", "GATEWAY_ADMIN_TOKEN": "adm-secret", "DATABASE_URL": "postgres://u:pw@db/gw"}[name]
	}
	tests := []struct{ env, want string }{
		{"OPENAI_API_KEY", "sk-provider"},
		{"GATEWAY_ADMIN_TOKEN", ""},
		{"DATABASE_URL", ""},
	}
	for _, tc := range tests {
		t.Run(tc.env, func(t *testing.T) {
			t.Parallel()
			u := Upstream(m, &store.Provider{BaseURL: "http://up", APIKeyEnv: tc.env}, &store.Route{}, env)
			if u.APIKey != tc.want {
				t.Errorf("APIKey from %s = %q, want %q", tc.env, u.APIKey, tc.want)
			}
		})
	}
}

// The credential is read per call and cached per name: a changed value (a rotated key, a
// test's t.Setenv) is sent from the next call on and hidden from upstream strings as well,
// as the first one was; the same value again is served without a second note.
func TestUpstreamSeesAChangedCredentialAndHidesIt(t *testing.T) {
	t.Parallel()
	m := &snapshot.Model{Model: store.Model{ID: "m"}}
	p := &store.Provider{BaseURL: "http://up", APIKeyEnv: "ROUTING_ROTATED_KEY"}
	value := "sk-rotated-first-0123456789"
	env := func(name string) string {
		if name == p.APIKeyEnv {
			return value
		}
		return ""
	}
	for _, v := range []string{"sk-rotated-first-0123456789", "sk-rotated-first-0123456789", "sk-rotated-second-9876543210"} {
		value = v
		if u := Upstream(m, p, &store.Route{}, env); u.APIKey != v {
			t.Fatalf("APIKey = %q, want %q", u.APIKey, v)
		}
		if got := provider.Redact("upstream said " + v); got != "upstream said "+provider.Redacted {
			t.Fatalf("the credential in use was not hidden: %q", got)
		}
	}
}

func TestCallPrefersTheModelsOutputLimit(t *testing.T) {
	t.Parallel()
	limit := int32(77)
	if c := Call(&snapshot.Model{}, provider.Upstream{}, nil, 4096); c.DefaultMaxTokens != 4096 {
		t.Errorf("without a model limit: %d, want 4096", c.DefaultMaxTokens)
	}
	if c := Call(&snapshot.Model{Model: store.Model{OutputTokenLimit: &limit}}, provider.Upstream{}, nil, 4096); c.DefaultMaxTokens != 77 {
		t.Errorf("with a model limit: %d, want 77", c.DefaultMaxTokens)
	}
}

// BenchmarkUpstreamWith is the per-call cost of an upstream's address and credential, read
// from the process environment as the gateway does.
func BenchmarkUpstreamWith(b *testing.B) {
	b.Setenv("ROUTING_BENCH_KEY", "sk-routing-bench-0123456789")
	m := &snapshot.Model{Model: store.Model{ID: "m"}}
	p := &store.Provider{BaseURL: "http://up", APIKeyEnv: "ROUTING_BENCH_KEY"}
	route := &store.Route{UpstreamModel: "up-m"}
	b.ReportAllocs()
	for b.Loop() {
		if u := UpstreamWith(m, p, route, nil, p.APIKeyEnv); u.APIKey == "" {
			b.Fatal("no credential")
		}
	}
}
