// Package routing is where a request for a model goes: the model's routes for an endpoint
// family in fallback order, and the upstream call an adapter makes for one of them. Core
// Generate (core/rpc) and the capability prober (core/verify) both use it, so that a probe
// reaches the upstream exactly as a client request would, and neither depends on the other.
package routing

import (
	"iter"
	"os"
	"slices"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/provider"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
)

// Routes yields the model's routes for a family in fallback order, with their providers.
func Routes(snap *snapshot.Snapshot, m *snapshot.Model, family string) iter.Seq2[*store.Route, *store.Provider] {
	return func(yield func(*store.Route, *store.Provider) bool) {
		for i := range m.Routes {
			r := &m.Routes[i]
			if slices.Contains(r.EndpointFamilies, family) && !yield(r, snap.Providers[r.ProviderID]) {
				return
			}
		}
	}
}

// First is the model's first route for the family, the one Routes yields first; nil when
// none serves it.
func First(m *snapshot.Model, family string) *store.Route {
	for i := range m.Routes {
		if slices.Contains(m.Routes[i].EndpointFamilies, family) {
			return &m.Routes[i]
		}
	}
	return nil
}

// Upstream is where a route of the model sends its calls: the provider's address, its
// credential from the environment (env, os.Getenv when nil) and both model names.
func Upstream(m *snapshot.Model, p *store.Provider, route *store.Route, env func(string) string) provider.Upstream {
	return UpstreamWith(m, p, route, env, p.APIKeyEnv)
}

// UpstreamWith is Upstream with the credential of keyEnv, one of the provider's pool.
func UpstreamWith(m *snapshot.Model, p *store.Provider, route *store.Route, env func(string) string, keyEnv string) provider.Upstream {
	u := provider.Upstream{
		PublicModel: m.ID, UpstreamModel: route.UpstreamModel, BaseURL: p.BaseURL,
		Timeouts: provider.Timeouts{FirstByte: p.FirstByteTimeout, Idle: p.IdleTimeout},
	}
	// A catalogue stored before catalog.GatewayEnv was enforced may still name one of the
	// gateway's own variables; its value must not leave for the provider's address.
	if keyEnv != "" {
		if env == nil {
			env = os.Getenv
		}
		u.APIKey = apiKey(env, keyEnv)
	}
	if u.UpstreamModel == "" {
		u.UpstreamModel = m.ID
	}
	return u
}

// Call is one attempt at a route: the request for the upstream, with the output limit sent
// to a protocol that requires one (the model's explicit limit, else defaultMaxTokens).
func Call(m *snapshot.Model, up provider.Upstream, req *corev1.GenerateRequest, defaultMaxTokens int64) *provider.Call {
	c := &provider.Call{Request: req, Upstream: up, DefaultMaxTokens: defaultMaxTokens}
	if m.OutputTokenLimit != nil {
		c.DefaultMaxTokens = int64(*m.OutputTokenLimit)
	}
	return c
}
