package routing

import (
	"fmt"
	"testing"
	"time"

	"modelgateway/core/snapshot"
	"modelgateway/core/store"
)

// group is a model whose chat routes are given as (provider, priority, weight).
func group(routes ...store.Route) (*snapshot.Snapshot, *snapshot.Model) {
	snap := &snapshot.Snapshot{Providers: map[string]*store.Provider{}}
	m := &snapshot.Model{Model: store.Model{ID: "m"}}
	for i, r := range routes {
		r.Position, r.EndpointFamilies, r.UpstreamModel = i, []string{"chat.completions"}, "up-"+r.ProviderID
		m.Routes = append(m.Routes, r)
		snap.Providers[r.ProviderID] = &store.Provider{ID: r.ProviderID, Kind: "openai", Cooldown: time.Second}
	}
	return snap, m
}

func first(h *Health, snap *snapshot.Snapshot, m *snapshot.Model, conv Conversation, now time.Time) string {
	var buf PlanBuffer
	p := h.Plan(snap, m, "chat.completions", conv, now, &buf)
	defer p.Release()
	if len(p.List) == 0 {
		return ""
	}
	return p.List[0].Route.ProviderID
}

// Inside a group the first route is drawn by weight: 3:1 over 4000 plans within 10 % of 3000;
// the next group comes after the whole first one.
func TestPlanDrawsByWeightInsideAGroupAndOrdersGroups(t *testing.T) {
	t.Parallel()
	snap, m := group(store.Route{ProviderID: "a", Weight: 3}, store.Route{ProviderID: "b", Weight: 1}, store.Route{ProviderID: "z", Priority: 1})
	h, now := NewHealth(), time.Now()
	count := map[string]int{}
	for range 4000 {
		var pbuf PlanBuffer
		p := h.Plan(snap, m, "chat.completions", 0, now, &pbuf)
		if len(p.List) != 3 || p.List[2].Route.ProviderID != "z" {
			t.Fatalf("plan %v: the priority-1 route must come last", p.List)
		}
		count[p.List[0].Route.ProviderID]++
	}
	if count["a"] < 2700 || count["a"] > 3300 || count["z"] != 0 {
		t.Errorf("first routes %v, want a ≈ 3000 of 4000 and z never first", count)
	}
}

// A conversation keeps its route while it is healthy; conversations spread over both; when
// its route is set aside it moves, and comes back once the route has recovered.
func TestPlanKeepsAConversationOnItsRoute(t *testing.T) {
	t.Parallel()
	snap, m := group(store.Route{ProviderID: "a", Weight: 1}, store.Route{ProviderID: "b", Weight: 1})
	h, now := NewHealth(), time.Now()
	seen := map[string]int{}
	for i := range 200 {
		conv := ConversationOf("c", fmt.Sprint("conversation-", i))
		r := first(h, snap, m, conv, now)
		for range 9 {
			if again := first(h, snap, m, conv, now); again != r {
				t.Fatalf("conversation %d moved from %s to %s on a healthy group", i, r, again)
			}
		}
		seen[r]++
	}
	if seen["a"] < 70 || seen["b"] < 70 {
		t.Errorf("200 conversations over a 1:1 group went %v", seen)
	}
	conv := ConversationOf("c", "x")
	home := first(h, snap, m, conv, now)
	var pbuf PlanBuffer
	p := h.Plan(snap, m, "chat.completions", conv, now, &pbuf)
	for range FailuresToCool {
		h.Failed(&p.List[0], now)
	}
	if got := first(h, snap, m, conv, now); got == home || got == "" {
		t.Fatalf("route %s set aside, the conversation still went to %q", home, got)
	}
	later := now.Add(2 * time.Second) // past the cooldown: one trial, which succeeds
	p = h.Plan(snap, m, "chat.completions", conv, later, &pbuf)
	if p.List[0].Route.ProviderID != home {
		t.Fatalf("after the cooldown the trial went to %s, want %s", p.List[0].Route.ProviderID, home)
	}
	h.Succeeded(&p.List[0])
	p.Release()
	if got := first(h, snap, m, conv, later); got != home {
		t.Errorf("recovered route %s, conversation went to %s", home, got)
	}
}

// Five failures in a row set a route aside for its cooldown; then exactly one request tries it
// (a second one at the same time does not); a failed trial sets it aside again. With every
// route set aside, all are tried, the one set aside longest first.
func TestPlanCooldownSkipsThenProbes(t *testing.T) {
	t.Parallel()
	snap, m := group(store.Route{ProviderID: "a"}, store.Route{ProviderID: "b", Priority: 1})
	h, now := NewHealth(), time.Now()
	var pbuf PlanBuffer
	var p Plan
	for i := range FailuresToCool {
		p = h.Plan(snap, m, "chat.completions", 0, now, &pbuf)
		if p.List[0].Route.ProviderID != "a" {
			t.Fatalf("failure %d: a is skipped before 5 failures", i)
		}
		if aside := h.Failed(&p.List[0], now); aside != (i == FailuresToCool-1) {
			t.Fatalf("failure %d: set aside %v", i+1, aside)
		}
		p.Release()
	}
	if got := first(h, snap, m, 0, now.Add(500*time.Millisecond)); got != "b" {
		t.Fatalf("during the cooldown the plan starts with %s, want b", got)
	}
	if n := h.SetAside(m, "chat.completions"); n != 1 {
		t.Errorf("SetAside = %d, want 1 (the status page's route health)", n)
	}
	trial := now.Add(1100 * time.Millisecond)
	p = h.Plan(snap, m, "chat.completions", 0, trial, &pbuf)
	var otherbuf PlanBuffer
	other := h.Plan(snap, m, "chat.completions", 0, trial, &otherbuf)
	if p.List[0].Route.ProviderID != "a" || other.List[0].Route.ProviderID != "b" {
		t.Fatalf("after the cooldown: %s then %s, want one trial of a, the other request on b", p.List[0].Route.ProviderID, other.List[0].Route.ProviderID)
	}
	h.Failed(&p.List[0], trial)
	p.Release()
	if got := first(h, snap, m, 0, trial.Add(500*time.Millisecond)); got != "b" {
		t.Fatalf("a failed trial sets a aside again; plan starts with %s", got)
	}
	// b fails too: both aside, a longest; both are tried, a first.
	for range FailuresToCool {
		h.Failed(&Candidate{Route: &m.Routes[1], Provider: snap.Providers["b"], State: h.route("m", &m.Routes[1])}, trial)
	}
	p = h.Plan(snap, m, "chat.completions", 0, trial.Add(100*time.Millisecond), &pbuf)
	if len(p.List) != 2 || p.List[0].Route.ProviderID != "a" || p.List[1].Route.ProviderID != "b" {
		t.Errorf("every route aside: plan %v, want a then b", p.List)
	}
}

// A pool is used in turn; a credential set aside is skipped until its time is up; a request
// that has tried every credential gets none.
func TestCredentialsInTurn(t *testing.T) {
	t.Parallel()
	p := &store.Provider{ID: "p", APIKeyEnv: "K1", APIKeyPool: []string{"K1", "K2", "K3"}}
	h, now := NewHealth(), time.Now()
	var got []string
	for range 6 {
		name, _, _ := h.Credential(p, 0, now)
		got = append(got, name)
	}
	if fmt.Sprint(got) != "[K1 K2 K3 K1 K2 K3]" {
		t.Fatalf("turns %v", got)
	}
	h.SetCredentialAside(p, 1, time.Minute, now)
	for range 4 {
		if name, _, _ := h.Credential(p, 0, now); name == "K2" {
			t.Fatal("K2 is set aside and was chosen")
		}
	}
	if name, _, _ := h.Credential(p, 0, now.Add(2*time.Minute)); name == "" {
		t.Fatal("no credential after the set-aside time")
	}
	if _, _, ok := h.Credential(p, 0b111, now); ok || MoreCredentials(p, 0b111) || !MoreCredentials(p, 0b101) {
		t.Error("a request that tried all three must get none")
	}
	one := &store.Provider{ID: "one", APIKeyEnv: "K"}
	if name, _, ok := h.Credential(one, 0, now); !ok || name != "K" {
		t.Errorf("one credential: %q %v", name, ok)
	}
}

// The request path stays cheap: a plan of a one-route or two-route model allocates nothing.
func TestPlanAllocatesNothing(t *testing.T) {
	for _, n := range []int{1, 2} {
		routes := []store.Route{{ProviderID: "a"}, {ProviderID: "b"}}[:n]
		snap, m := group(routes...)
		h, now := NewHealth(), time.Now()
		allocs := testing.AllocsPerRun(1000, func() {
			var pbuf PlanBuffer
			p := h.Plan(snap, m, "chat.completions", ConversationOf("c", "k"), now, &pbuf)
			h.Succeeded(&p.List[0])
			p.Release()
		})
		if allocs != 0 {
			t.Errorf("%d routes: %v allocations per plan", n, allocs)
		}
	}
}

func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{1, 2} {
		routes := []store.Route{{ProviderID: "a"}, {ProviderID: "b"}}[:n]
		snap, m := group(routes...)
		h, now := NewHealth(), time.Now()
		conv := ConversationOf("c", "k")
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var pbuf PlanBuffer
				p := h.Plan(snap, m, "chat.completions", conv, now, &pbuf)
				h.Succeeded(&p.List[0])
				p.Release()
			}
		})
	}
}
