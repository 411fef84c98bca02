// Package snapshot is the in-memory view of keys, policies and the catalogue that every
// request is checked against: built from PostgreSQL in one consistent read, swapped
// atomically, never queried per request.
package snapshot

import (
	"cmp"
	"slices"
	"time"

	"github.com/google/uuid"

	"modelgateway/core/keys"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// Wildcard in a key policy means every family or every active model.
const Wildcard = "*"

// Snapshot is immutable once built.
type Snapshot struct {
	Currency  string
	Families  []store.Family // active, in public catalogue order
	Providers map[string]*store.Provider
	Fx        *store.FxSnapshot
	LoadedAt  time.Time

	models    map[string]*Model // all models, active or not
	ordered   []*Model          // active models: family order, then priority, then id
	keys      map[[32]byte]*Key // active keys by secret hash
	keysByID  map[uuid.UUID]*Key
	familyPos map[string]int
}

// Model is a catalogue model with its routes, prices and capabilities attached.
type Model struct {
	store.Model
	Routes       []store.Route
	Prices       []store.Price
	Capabilities map[string]store.Capability // by endpoint family
	// endpoint families the model is served on (the union of its routes)
	served map[string]bool
}

// Serves reports whether the model has a route for the endpoint family.
func (m *Model) Serves(family string) bool { return m.served[family] }

// EndpointFamilies lists the families the model is served on, in contract order.
func (m *Model) EndpointFamilies(order []string) []string {
	var out []string
	for _, f := range order {
		if m.served[f] {
			out = append(out, f)
		}
	}
	return out
}

// Key is an active API key with its policy as sets.
type Key struct {
	ID, ProfileID uuid.UUID
	Prefix        string // the display prefix: identifies the key, cannot use it
	allEndpoints  bool
	endpoints     map[string]bool
	allModels     bool
	models        map[string]bool

	// MaxConcurrent and MaxRPS are the key's request limits across replicas; 0: none.
	MaxConcurrent, MaxRPS int32
	// MaxTPM is the key's input + output tokens per rolling minute across replicas; 0: none.
	MaxTPM int32
	// Budget caps the key's charges per window (nil: none); from ExpireTime on (zero: never)
	// the key is refused as invalid.
	Budget     *store.Budget
	ExpireTime time.Time

	// The ids' text, made once per snapshot: every request's outcome and key check carry
	// them, and formatting a UUID allocates.
	idText, profileText string
}

// IDText is k.ID.String().
func (k *Key) IDText() string {
	if k.idText == "" {
		return k.ID.String()
	}
	return k.idText
}

// ProfileText is k.ProfileID.String().
func (k *Key) ProfileText() string {
	if k.profileText == "" {
		return k.ProfileID.String()
	}
	return k.profileText
}

// AllowsEndpoint reports whether the key may use an endpoint family.
func (k *Key) AllowsEndpoint(family string) bool { return k.allEndpoints || k.endpoints[family] }

// AllowsModel reports whether the key's model list includes the model.
func (k *Key) AllowsModel(id string) bool { return k.allModels || k.models[id] }

// Build indexes catalogue data.
func Build(d *store.CatalogData, now time.Time) *Snapshot {
	s := &Snapshot{
		Currency:  d.Currency,
		Providers: make(map[string]*store.Provider, len(d.Providers)),
		Fx:        d.Fx,
		LoadedAt:  now,
		models:    make(map[string]*Model, len(d.Models)),
		keys:      make(map[[32]byte]*Key, len(d.Keys)),
		keysByID:  make(map[uuid.UUID]*Key, len(d.Keys)),
		familyPos: make(map[string]int, len(d.Families)),
	}
	for _, f := range d.Families {
		if f.Active {
			s.familyPos[f.ID] = len(s.Families)
			s.Families = append(s.Families, f)
		}
	}
	for i := range d.Providers {
		s.Providers[d.Providers[i].ID] = &d.Providers[i]
	}
	for _, m := range d.Models {
		s.models[m.ID] = &Model{Model: m, Capabilities: map[string]store.Capability{}, served: map[string]bool{}}
	}
	for _, r := range d.Routes {
		if m := s.models[r.ModelID]; m != nil {
			if p := s.Providers[r.ProviderID]; p == nil || !p.Active {
				continue // an inactive provider serves nothing
			}
			m.Routes = append(m.Routes, r)
			for _, f := range r.EndpointFamilies {
				m.served[f] = true
			}
		}
	}
	for _, p := range d.Prices {
		if m := s.models[p.ModelID]; m != nil {
			m.Prices = append(m.Prices, p)
		}
	}
	for _, c := range d.Capabilities {
		if m := s.models[c.ModelID]; m != nil {
			m.Capabilities[c.EndpointFamily] = c
		}
	}
	for _, m := range s.models {
		if _, famActive := s.familyPos[m.Family]; m.Active && famActive {
			s.ordered = append(s.ordered, m)
		}
	}
	slices.SortFunc(s.ordered, func(a, b *Model) int {
		return cmp.Or(
			cmp.Compare(s.familyPos[a.Family], s.familyPos[b.Family]),
			cmp.Compare(a.Priority, b.Priority),
			cmp.Compare(a.ID, b.ID),
		)
	})
	for _, k := range d.Keys {
		if k.State != store.KeyActive || len(k.SecretHash) != 32 {
			continue
		}
		key := &Key{ID: k.ID, ProfileID: k.ProfileID, Prefix: k.Prefix, MaxConcurrent: k.MaxConcurrent, MaxRPS: k.MaxRPS, MaxTPM: k.MaxTPM, endpoints: map[string]bool{}, models: map[string]bool{},
			idText: k.ID.String(), profileText: k.ProfileID.String()}
		key.Budget = k.Budget
		if k.ExpireTime != nil {
			key.ExpireTime = *k.ExpireTime
		}
		for _, e := range k.AllowedEndpoints {
			key.allEndpoints = key.allEndpoints || e == Wildcard
			key.endpoints[e] = true
		}
		for _, m := range k.AllowedModels {
			key.allModels = key.allModels || m == Wildcard
			key.models[m] = true
		}
		s.keys[[32]byte(k.SecretHash)] = key
		s.keysByID[k.ID] = key
	}
	return s
}

// Authenticate finds the active key for a secret.
func (s *Snapshot) Authenticate(secret string) (*Key, *apierror.Error) {
	if secret == "" {
		return nil, apierror.New(apierror.InvalidKey, "no API key was provided")
	}
	if k := s.keys[keys.Hash(secret)]; k != nil {
		// Checked on every request, not when the snapshot is built: an expiry takes effect
		// at its instant on every replica, whenever the snapshot was loaded.
		if !k.ExpireTime.IsZero() && !time.Now().Before(k.ExpireTime) {
			return nil, apierror.New(apierror.InvalidKey, "the API key has expired")
		}
		return k, nil
	}
	return nil, apierror.New(apierror.InvalidKey, "the API key is not valid")
}

// AuthenticateID is Authenticate for a caller that holds no secret but names an active key
// by its id: a batch item, which runs with the checks of the key that created its batch as
// they are when it runs (core/rpc's batch credential vouches for the id).
func (s *Snapshot) AuthenticateID(id uuid.UUID) (*Key, *apierror.Error) {
	k := s.keysByID[id]
	if k == nil {
		return nil, apierror.New(apierror.InvalidKey, "the API key that created this batch is no longer valid")
	}
	if !k.ExpireTime.IsZero() && !time.Now().Before(k.ExpireTime) {
		return nil, apierror.New(apierror.InvalidKey, "the API key has expired")
	}
	return k, nil
}

// active returns an active model whose family is active, or nil.
func (s *Snapshot) active(id string) *Model {
	m := s.models[id]
	if m == nil || !m.Active {
		return nil
	}
	if _, ok := s.familyPos[m.Family]; !ok {
		return nil
	}
	return m
}

// Authorize decides whether the key may call family with model, in the order a client can act
// on: the route first, then the model's existence, then the key's model list.
func (s *Snapshot) Authorize(k *Key, family, model string) (*Model, *apierror.Error) {
	if !k.AllowsEndpoint(family) {
		return nil, apierror.New(apierror.EndpointNotAllowed, "this API key may not use the %s endpoint", family)
	}
	if model == "" {
		return nil, nil
	}
	m := s.active(model)
	if m == nil {
		return nil, apierror.New(apierror.ModelNotFound, "the model %q does not exist", model)
	}
	if !k.AllowsModel(model) {
		return nil, apierror.New(apierror.ModelNotAllowed, "this API key may not use the model %q", model)
	}
	if !m.Serves(family) {
		return nil, apierror.New(apierror.ModelNotFound, "the model %q is not available on the %s endpoint", model, family)
	}
	return m, nil
}

// Visible reports whether the key may use the model on at least one of its allowed families
// (spec 2.1): the rule behind every authenticated model list.
func (s *Snapshot) Visible(k *Key, m *Model, families ...string) bool {
	if !k.AllowsModel(m.ID) {
		return false
	}
	for f := range m.served {
		if k.AllowsEndpoint(f) && (len(families) == 0 || slices.Contains(families, f)) {
			return true
		}
	}
	return false
}

// VisibleModels lists, in catalogue order, the models the key may use, optionally only on the
// given families.
func (s *Snapshot) VisibleModels(k *Key, families ...string) []*Model {
	var out []*Model
	for _, m := range s.ordered {
		if s.Visible(k, m, families...) {
			out = append(out, m)
		}
	}
	return out
}

// VisibleModel is one model if the key may see it.
func (s *Snapshot) VisibleModel(k *Key, id string, families ...string) (*Model, *apierror.Error) {
	if m := s.active(id); m != nil && s.Visible(k, m, families...) {
		return m, nil
	}
	return nil, apierror.New(apierror.ModelNotFound, "the model %q does not exist or is not available to this key", id)
}

// ActiveModels lists active models in catalogue order (family, priority, id).
func (s *Snapshot) ActiveModels() []*Model { return s.ordered }

// Model returns any model by id, active or not.
func (s *Snapshot) Model(id string) *Model { return s.models[id] }
