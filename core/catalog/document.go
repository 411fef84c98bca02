// Package catalog parses and validates the operator's catalog document (contract.md,
// "Catalog document"): the families, providers, models, routes, prices and capabilities
// that `gateway apply` and the ApplyCatalog RPC install.
//
// The package knows nothing about the database. A document may refer to families and
// providers it does not declare, because they may already exist; References lists those
// so that the caller can check them against what is stored.
package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// Document is a parsed catalog document. Parse fills in defaults, so a parsed Document
// says explicitly what will be applied.
type Document struct {
	Currency  string // billing currency; "" means keep the current one
	Prune     bool   // deactivate what the document does not name
	Families  []Family
	Providers []Provider
	Models    []Model
}

// Family is a model family; the order of Document.Families is the public catalogue order.
type Family struct{ ID string }

// Provider is an upstream endpoint. Its credentials stay in the environment variable
// APIKeyEnv names: they are never part of the document or the database.
type Provider struct {
	ID, Kind, BaseURL, APIKeyEnv  string
	FirstByteTimeout, IdleTimeout time.Duration // 0 = the gateway's default
	// APIKeyPool is set when api_key_env is a list: a pool of credentials used in turn
	// (contract.md, "Routing"). APIKeyEnv is then its first entry, so that code reading one
	// credential reads the first of the pool.
	APIKeyPool []string
	// Retry is how often one route of this provider is tried for one request; nil = once.
	Retry *Retry
	// Cooldown is how long a failing route or credential is set aside; 0 = the default (30s).
	Cooldown time.Duration
}

// Retry is a provider's retry policy: Attempts per route in all, the first included, and the
// base of the exponential backoff between them (0 = the gateway's default).
type Retry struct {
	Attempts int
	Backoff  time.Duration
}

// KeyEnvs are the provider's credential variables: the pool, or the one api_key_env.
func (p Provider) KeyEnvs() []string {
	if len(p.APIKeyPool) > 0 {
		return p.APIKeyPool
	}
	if p.APIKeyEnv != "" {
		return []string{p.APIKeyEnv}
	}
	return nil
}

// Model is a public model.
type Model struct {
	ID, DisplayName, Family, OwnedBy string
	Priority                         int  // lower first inside the family; ties by ID
	Active                           bool // Parse defaults it to true
	OutputTokenLimit                 *int // nil = no explicit limit
	// BatchPriceFactor multiplies the model's prices for batch items; nil is 1.
	BatchPriceFactor *decimal.Decimal
	Streaming        bool // Parse defaults it to true
	Routes           []Route
	Prices           []Price
	Capabilities     []Capability
}

// Route sends a model's endpoint families to a provider. Several routes covering the same
// family are tried in order: that is the fallback order.
type Route struct {
	EndpointFamilies []string
	Provider         string
	UpstreamModel    string // Parse defaults it to the model ID
	// Priority orders groups of routes, lowest first; nil = the route's position.
	Priority *int
	// Weight is the route's share inside its group; nil = 1.
	Weight *int
}

// Price is one price set of a model; it may cover several endpoint families, and a family
// is covered by at most one price set of a model. Amounts are in the document's currency:
// per 1M tokens for per_token, per request for per_request.
type Price struct {
	EndpointFamilies []string
	BillingMode      string // BillingPerToken or BillingPerRequest

	// Amounts; nil = not priced (null or absent in the document).
	Input, CachedInput, CacheWrite, Output, Request *decimal.Decimal
	// AudioInput and AudioOutput price the audio part of input and output (realtime, audio
	// models); nil = the text rate.
	AudioInput, AudioOutput *decimal.Decimal
}

// Capability records which optional parameters (spec.md 2.3, 2.6) were verified for one
// endpoint family of a model. An empty OptionalParameters means none is supported; a
// missing Capability means unknown.
type Capability struct {
	EndpointFamily     string
	OptionalParameters []string
	VerifiedAt         time.Time // Parse returns it in UTC
}

// ValidationError lists every problem found in a document, one per entry, each starting
// with the path of the offending field (e.g. "models[1].prices[0].input: ..."). All of them
// are reported at once so that an operator can fix a document in one round trip.
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string { return strings.Join(e.Problems, "\n") }

// Parse decodes a catalog document written in YAML or JSON (JSON is read as YAML, so both
// follow one schema), rejects unknown fields, applies defaults and validates the result.
// Any failure is a *ValidationError.
func Parse(data []byte) (*Document, error) {
	var dec decoder
	doc := dec.document(data)
	problems := dec.problems
	if doc != nil {
		// Where a value could not be decoded, Validate would only repeat the complaint in
		// other words ("is required", "needs at least one amount"), so it is left out.
		for _, p := range doc.check() {
			if !dec.hides(p.path) {
				problems = append(problems, p)
			}
		}
	}
	if len(problems) > 0 {
		return nil, problems.err()
	}
	return doc, nil
}

// Validate reports every problem in d as a *ValidationError, or nil. It is what Parse runs
// after decoding, and it does not fill in defaults: a Document built in code must set
// Route.UpstreamModel itself.
func (d *Document) Validate() error {
	if ps := d.check(); len(ps) > 0 {
		return ps.err()
	}
	return nil
}

// References returns the family and provider ids the document refers to without declaring
// them, sorted. They are not errors here (they may exist in the database already); the
// caller must check them before applying.
func (d *Document) References() (families, providers []string) {
	declaredFamilies := make(map[string]bool, len(d.Families))
	for _, f := range d.Families {
		declaredFamilies[f.ID] = true
	}
	declaredProviders := make(map[string]bool, len(d.Providers))
	for _, p := range d.Providers {
		declaredProviders[p.ID] = true
	}
	for _, m := range d.Models {
		if m.Family != "" && !declaredFamilies[m.Family] {
			families = append(families, m.Family)
		}
		for _, r := range m.Routes {
			if r.Provider != "" && !declaredProviders[r.Provider] {
				providers = append(providers, r.Provider)
			}
		}
	}
	slices.Sort(families)
	slices.Sort(providers)
	return slices.Compact(families), slices.Compact(providers)
}

// JSON renders d in its canonical JSON form: every field present, amounts as decimal
// strings, null for unpriced components and absent limits, durations like "60s",
// timestamps in UTC. Parse(d.JSON()) yields a Document equal to d when d came from Parse.
func (d *Document) JSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Display names and URLs are read by people; \u0026 for & helps nobody.
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(render(d)); err != nil {
		return nil, fmt.Errorf("render catalog document: %w", err)
	}
	return buf.Bytes(), nil
}
