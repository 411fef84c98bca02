package routing

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"modelgateway/core/snapshot"
	"modelgateway/core/store"
)

// Defaults of the catalogue's routing fields (contract.md, "Routing").
const (
	// DefaultCooldown sets aside a failing route, or a rate-limited credential without a
	// retry-after, when the provider names no cooldown.
	DefaultCooldown = 30 * time.Second
	// DefaultBackoff is the base of the backoff between attempts at one route.
	DefaultBackoff = 100 * time.Millisecond
	// FailuresToCool is how many failed attempts in a row set a route aside.
	FailuresToCool = 5
	// RefusedCredential is how long a credential answered 401/403 is set aside.
	RefusedCredential = 5 * time.Minute
	// MaxRetryAfter is the longest retry-after honoured by waiting; a longer one moves on.
	MaxRetryAfter = 10 * time.Second
)

// Health is one replica's memory of its upstreams: which routes failed how often in a row
// and which are set aside until when, which credentials are set aside, and whose turn it is
// in each credential pool. It outlives catalogue snapshots (they are rebuilt whenever a key
// changes), so it is keyed by what names a route, not by a snapshot's pointers.
type Health struct {
	mu     sync.RWMutex
	routes map[routeKey]*RouteState
	pools  map[string]*pool
}

// NewHealth is an empty memory: every route healthy.
func NewHealth() *Health {
	return &Health{routes: map[routeKey]*RouteState{}, pools: map[string]*pool{}}
}

// routeKey names a route by its model and position: cheap to hash on every request. The
// state remembers the provider and upstream model it was made for, so that a catalogue that
// puts another route at the position starts it afresh.
type routeKey struct {
	model    string
	position int
}

// RouteState is one route's health; its fields change atomically, so that a request on a
// healthy route only reads them.
type RouteState struct {
	provider, upstream string
	fails              atomic.Int32
	// asideUntil is when the set-aside route may be tried again (unix ns); 0: healthy.
	asideUntil atomic.Int64
	// asideSince is when it was set aside: the route set aside longest is tried when all are.
	asideSince atomic.Int64
	// probing is held by the one request that tries a route whose cooldown has passed.
	probing atomic.Bool
}

// Aside reports whether the route is set aside at now (its trial not yet due).
func (s *RouteState) Aside(now time.Time) bool {
	u := s.asideUntil.Load()
	return u != 0 && now.UnixNano() < u
}

// Cooling reports whether the route is set aside or waiting for its trial request.
func (s *RouteState) Cooling() bool { return s.asideUntil.Load() != 0 }

func (h *Health) route(m string, r *store.Route) *RouteState {
	k := routeKey{m, r.Position}
	h.mu.RLock()
	s := h.routes[k]
	h.mu.RUnlock()
	if s != nil && s.provider == r.ProviderID && s.upstream == r.UpstreamModel {
		return s
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s = h.routes[k]; s == nil || s.provider != r.ProviderID || s.upstream != r.UpstreamModel {
		s = &RouteState{provider: r.ProviderID, upstream: r.UpstreamModel}
		h.routes[k] = s
	}
	return s
}

// RouteHealth is the state of a model's route, for the status page: nil when it was never
// used on this replica.
func (h *Health) RouteHealth(m string, r *store.Route) *RouteState {
	h.mu.RLock()
	defer h.mu.RUnlock()
	s := h.routes[routeKey{m, r.Position}]
	if s == nil || s.provider != r.ProviderID || s.upstream != r.UpstreamModel {
		return nil
	}
	return s
}

// SetAside counts the model's routes for the family that are set aside (cooling down, or
// waiting for their trial request), for the status page.
func (h *Health) SetAside(m *snapshot.Model, family string) int {
	n := 0
	for i := range m.Routes {
		r := &m.Routes[i]
		if s := h.RouteHealth(m.ID, r); s != nil && s.Cooling() && slices.Contains(r.EndpointFamilies, family) {
			n++
		}
	}
	return n
}

// Candidate is one route of a plan, with its provider and health.
type Candidate struct {
	Route    *store.Route
	Provider *store.Provider
	State    *RouteState
	// probe: this request holds the route's trial (Release gives it back if unused).
	probe bool
	score float64
}

// Plan is the order in which one request tries a model's routes for a family. Its first
// candidates live in the caller's buffer (PlanBuffer on the caller's stack), so that a model
// of a few routes costs no allocation.
type Plan struct {
	List []Candidate
}

// PlanBuffer holds the candidates of a plan of up to four routes.
type PlanBuffer [4]Candidate

// Conversation identifies a conversation for affinity; 0 means none (a random pick by
// weight).
type Conversation uint64

// Plan fills p with the model's routes for the family in the order of contract.md: groups
// by priority, lowest first; inside a group the routes by weight, the conversation's route
// first (rendezvous hashing, so that it stays put while it is healthy and only its own
// conversations move when it is not); routes set aside left out, unless all are: then all
// of them, the one set aside longest first. A route whose cooldown has passed is in the plan
// of one request at a time (its trial); Release gives an unused trial back.
func (h *Health) Plan(snap *snapshot.Snapshot, m *snapshot.Model, family string, conv Conversation, now time.Time, buf *PlanBuffer) Plan {
	return Plan{List: h.plan(snap, m, family, conv, now, buf[:0])}
}

func (h *Health) plan(snap *snapshot.Snapshot, m *snapshot.Model, family string, conv Conversation, now time.Time, list []Candidate) []Candidate {
	aside := 0 // routes set aside, kept after the healthy ones in case none is healthy
	for i := range m.Routes {
		r := &m.Routes[i]
		if !slices.Contains(r.EndpointFamilies, family) {
			continue
		}
		c := Candidate{Route: r, Provider: snap.Providers[r.ProviderID], State: h.route(m.ID, r)}
		if until := c.State.asideUntil.Load(); until != 0 {
			if now.UnixNano() < until || !c.State.probing.CompareAndSwap(false, true) {
				c.score = float64(c.State.asideSince.Load())
				list = append(list, c)
				aside++
				continue
			}
			c.probe = true
		}
		list = append(list, c)
		if aside > 0 { // keep the healthy ones first
			copy(list[len(list)-aside:], list[len(list)-aside-1:len(list)-1])
			list[len(list)-aside-1] = c
		}
	}
	if aside == len(list) {
		// Every route is set aside: a request is never refused for that alone. It tries them
		// all, the one set aside longest first, so that one that has come back answers.
		slices.SortStableFunc(list, func(a, b Candidate) int {
			return cmpFloat(a.score, b.score)
		})
		return list
	}
	list = list[:len(list)-aside]
	if len(list) == 1 {
		return list
	}
	for i := range list {
		c := &list[i]
		c.score = score(conv, c.Route, weight(c.Route))
	}
	slices.SortStableFunc(list, func(a, b Candidate) int {
		if a.Route.Priority != b.Route.Priority {
			return cmpInt(a.Route.Priority, b.Route.Priority)
		}
		if c := cmpFloat(a.score, b.score); c != 0 {
			return c
		}
		return cmpInt(a.Route.Position, b.Route.Position)
	})
	return list
}

// Release gives back the trials the plan holds: a route tried and settled (Succeeded,
// Failed) has given its trial back already; one not reached, or answered with a failure
// that says nothing of its health, is tried by the next request.
func (p *Plan) Release() {
	for i := range p.List {
		if c := &p.List[i]; c.probe {
			c.State.probing.Store(false)
		}
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func weight(r *store.Route) float64 {
	if r.Weight < 1 {
		return 1
	}
	return float64(r.Weight)
}

// score is a route's rank for a conversation: -ln(u)/w with u uniform in (0,1], lowest
// first. With u from a hash of the conversation and the route this is weighted rendezvous
// hashing; with a random u it is a weighted draw without replacement (the first route is
// chosen with probability w/sum(w)).
func score(conv Conversation, r *store.Route, w float64) float64 {
	var x uint64
	if conv == 0 {
		x = rand.Uint64()
	} else {
		x = mix(uint64(conv) ^ hashString(r.ProviderID) ^ hashString(r.UpstreamModel)*31 ^ uint64(r.Position)*0x9e3779b97f4a7c15)
	}
	u := (float64(x>>11) + 1) / (1 << 53) // (0, 1]
	return -math.Log(u) / w
}

// mix is SplitMix64's finaliser: every input bit moves every output bit.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hashString is FNV-1a, 64 bits: no allocation, enough to spread conversations.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// ConversationOf hashes the parts that name a conversation; empty parts are skipped, and no
// part at all is no conversation.
func ConversationOf(parts ...string) Conversation {
	h, any := uint64(14695981039346656037), false
	for _, s := range parts {
		if s == "" {
			continue
		}
		any = true
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= 1099511628211
		}
		h ^= 0xff // a separator, so that ("ab", "c") and ("a", "bc") differ
		h *= 1099511628211
	}
	if !any {
		return 0
	}
	return Conversation(h | 1)
}

// Succeeded records an answer from the route: it is healthy again.
func (h *Health) Succeeded(c *Candidate) {
	s := c.State
	if s.fails.Load() != 0 {
		s.fails.Store(0)
	}
	if s.asideUntil.Load() != 0 {
		s.asideUntil.Store(0)
		s.asideSince.Store(0)
	}
	if c.probe {
		s.probing.Store(false)
	}
}

// Failed records a retryable failure of the route; the FailuresToCool-th in a row, or a
// failed trial, sets it aside for the provider's cooldown. It reports whether the route is
// now set aside.
func (h *Health) Failed(c *Candidate, now time.Time) bool {
	s := c.State
	n := s.fails.Add(1)
	if c.probe || n >= FailuresToCool {
		if s.asideUntil.Load() == 0 {
			s.asideSince.Store(now.UnixNano())
		}
		s.asideUntil.Store(now.Add(Cooldown(c.Provider)).UnixNano())
		if c.probe {
			s.probing.Store(false)
		}
		return true
	}
	return false
}

// Cooldown is the provider's cooldown, or the default.
func Cooldown(p *store.Provider) time.Duration {
	if p != nil && p.Cooldown > 0 {
		return p.Cooldown
	}
	return DefaultCooldown
}

// Attempts is how often one request tries a route of the provider, at least once.
func Attempts(p *store.Provider) int {
	if p != nil && p.RetryAttempts > 1 {
		return p.RetryAttempts
	}
	return 1
}

// Backoff is the wait before the retry-th retry (1 = the second attempt) of a route of the
// provider: exponential from its backoff, with jitter (half of it random) so that requests
// that failed together do not come back together.
func Backoff(p *store.Provider, retry int) time.Duration {
	base := DefaultBackoff
	if p != nil && p.RetryBackoff > 0 {
		base = p.RetryBackoff
	}
	d := base << min(retry-1, 10)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// pool is the state of one provider's credential pool.
type pool struct {
	names []string
	next  atomic.Uint64
	// aside[i] is when credential i may be used again (unix ns); 0: usable.
	aside []atomic.Int64
}

func (h *Health) pool(p *store.Provider) *pool {
	h.mu.RLock()
	pl := h.pools[p.ID]
	h.mu.RUnlock()
	if pl != nil && slices.Equal(pl.names, p.APIKeyPool) {
		return pl
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if pl = h.pools[p.ID]; pl == nil || !slices.Equal(pl.names, p.APIKeyPool) {
		pl = &pool{names: slices.Clone(p.APIKeyPool), aside: make([]atomic.Int64, len(p.APIKeyPool))}
		h.pools[p.ID] = pl
	}
	return pl
}

// Credential picks the provider's next credential variable in turn, skipping those set aside
// and those this request has tried (tried, a bit per pool entry); when every untried one is
// set aside, the one free soonest. ok is false when the request has tried them all. A
// provider of one credential always gets it (index 0).
func (h *Health) Credential(p *store.Provider, tried uint64, now time.Time) (name string, i int, ok bool) {
	if len(p.APIKeyPool) < 2 {
		if tried&1 != 0 {
			return "", 0, false
		}
		return p.APIKeyEnv, 0, true
	}
	pl := h.pool(p)
	n := len(pl.names)
	start := int(pl.next.Add(1)-1) % n
	best, bestUntil := -1, int64(math.MaxInt64)
	for k := range n {
		j := (start + k) % n
		if j < 64 && tried&(1<<j) != 0 {
			continue
		}
		until := pl.aside[j].Load()
		if until == 0 || now.UnixNano() >= until {
			return pl.names[j], j, true
		}
		if until < bestUntil {
			best, bestUntil = j, until
		}
	}
	if best < 0 {
		return "", 0, false
	}
	return pl.names[best], best, true
}

// MoreCredentials reports whether the provider has a credential this request has not tried.
func MoreCredentials(p *store.Provider, tried uint64) bool {
	n := max(len(p.APIKeyPool), 1)
	for j := range min(n, 64) {
		if tried&(1<<j) == 0 {
			return true
		}
	}
	return false
}

// SetCredentialAside keeps credential i of the provider's pool out of turn for d.
func (h *Health) SetCredentialAside(p *store.Provider, i int, d time.Duration, now time.Time) {
	if len(p.APIKeyPool) < 2 {
		return // one credential: nothing else to turn to
	}
	pl := h.pool(p)
	if i < len(pl.aside) {
		pl.aside[i].Store(now.Add(d).UnixNano())
	}
}
