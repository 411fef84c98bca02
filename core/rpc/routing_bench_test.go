package rpc

import (
	"context"
	"fmt"
	"testing"

	"modelgateway/core/provider"
	"modelgateway/core/provider/openai"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
)

// BenchmarkFirstAnswer is the routing cost of one request that its first route answers: a
// one-route model and a healthy two-route group (issue 33: a group must add no measurable CPU
// per request over one route).
func BenchmarkFirstAnswer(b *testing.B) {
	for _, n := range []int{1, 2} {
		snap := &snapshot.Snapshot{Providers: map[string]*store.Provider{}}
		m := &snapshot.Model{Model: store.Model{ID: "m"}}
		for i := range n {
			id := fmt.Sprint("p", i)
			snap.Providers[id] = &store.Provider{ID: id, Kind: "openai", APIKeyEnv: "K"}
			m.Routes = append(m.Routes, store.Route{ModelID: "m", Position: i, EndpointFamilies: []string{"chat.completions"}, ProviderID: id, UpstreamModel: "u", Weight: 1})
		}
		s := &CoreServer{Deps: &Deps{Adapters: map[string]provider.Adapter{"openai": openai.Adapter{}}, Env: func(string) string { return "key" }}}
		attempt := func(provider.Adapter, provider.Upstream) (int, error) { return 1, nil }
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bl := billed{s: s, ctx: context.Background(), snap: snap, m: m, out: Outcome{EndpointFamily: "chat.completions"}}
				if _, _, err := firstAnswer(&bl, always, attempt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
