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
	"math"
	"math/big"
	"net/url"
	"regexp"
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

// Limits of what the database stores: money is numeric(38,9), limits and priorities are
// integer columns, timeouts are kept in milliseconds.
const (
	maxFractionDigits = 9
	maxInt32          = math.MaxInt32
)

var maxAmount = decimal.New(1, 15)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// problem is one finding with the path of the field it concerns.
type problem struct{ path, msg string }

type problems []problem

func (ps *problems) addf(path, format string, args ...any) {
	*ps = append(*ps, problem{path, fmt.Sprintf(format, args...)})
}

func (ps problems) err() *ValidationError {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = where(p.path) + ": " + p.msg
	}
	return &ValidationError{Problems: lines}
}

// where names a path in a message; the empty path is the document as a whole.
func where(path string) string {
	if path == "" {
		return "document"
	}
	return path
}

func field(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// within reports whether path is inner or lies inside it.
func within(path, inner string) bool {
	if !strings.HasPrefix(path, inner) {
		return false
	}
	rest := path[len(inner):]
	return rest == "" || rest[0] == '.' || rest[0] == '['
}

func oneOf(v string, allowed []string) string {
	return fmt.Sprintf("%q is not one of %s", v, strings.Join(allowed, ", "))
}

// check is Validate with the paths kept apart, so that Parse can drop repetitions.
func (d *Document) check() problems {
	var ps problems
	if d.Currency != "" && !slices.Contains(Currencies, d.Currency) {
		ps.addf("currency", "%s", oneOf(d.Currency, Currencies))
	}

	familyIDs := map[string]string{}
	for i, f := range d.Families {
		ps.checkID(field(index("families", i), "id"), f.ID, familyIDs)
	}

	providerIDs := map[string]string{}
	for i, p := range d.Providers {
		ps.checkProvider(index("providers", i), p, providerIDs)
	}

	modelIDs := map[string]string{}
	for i, m := range d.Models {
		ps.checkModel(index("models", i), m, modelIDs)
	}
	return ps
}

// checkID requires a unique id without blanks: ids are matched exactly, in URLs among
// other places, and stray whitespace would make one id look like another.
func (ps *problems) checkID(path, id string, seen map[string]string) {
	switch {
	case id == "":
		ps.addf(path, "is required")
		return
	case strings.IndexFunc(id, isBlankOrControl) >= 0:
		ps.addf(path, "%q must not contain whitespace or control characters", id)
	}
	if first, dup := seen[id]; dup {
		ps.addf(path, "%q duplicates %s", id, first)
		return
	}
	seen[id] = path
}

func isBlankOrControl(r rune) bool {
	return r <= ' ' || r == 0x7f || r == 0x85 || r == 0xa0 || r == 0x2028 || r == 0x2029
}

func (ps *problems) checkProvider(path string, p Provider, seen map[string]string) {
	ps.checkID(field(path, "id"), p.ID, seen)
	switch {
	case p.Kind == "":
		ps.addf(field(path, "kind"), "is required")
	case !slices.Contains(ProviderKinds, p.Kind):
		ps.addf(field(path, "kind"), "%s", oneOf(p.Kind, ProviderKinds))
	}
	// The simulator runs inside the gateway, so it may do without an address and a key.
	needsUpstream := p.Kind != KindSimulator
	if p.BaseURL != "" || needsUpstream {
		ps.checkBaseURL(field(path, "base_url"), p.BaseURL)
	}
	ps.checkKeyEnv(path, p, needsUpstream) // env.go
	ps.checkTimeout(field(path, "timeout.first_byte"), p.FirstByteTimeout)
	ps.checkTimeout(field(path, "timeout.idle"), p.IdleTimeout)
	if p.Retry != nil {
		if p.Retry.Attempts < 1 || p.Retry.Attempts > maxRetryAttempts {
			ps.addf(field(path, "retry.attempts"), "%d must be between 1 and %d", p.Retry.Attempts, maxRetryAttempts)
		}
		ps.checkTimeout(field(path, "retry.backoff"), p.Retry.Backoff)
	}
	ps.checkTimeout(field(path, "cooldown"), p.Cooldown)
}

// maxRetryAttempts bounds retry.attempts: each attempt may wait its first-byte timeout.
const maxRetryAttempts = 10

// maxWeight bounds a route's weight; shares finer than 1 in 10000 mean nothing.
const maxWeight = 10000

func (ps *problems) checkBaseURL(path, s string) {
	if s == "" {
		ps.addf(path, "is required")
		return
	}
	u, err := url.Parse(s)
	switch {
	case err != nil, u.Scheme != "http" && u.Scheme != "https", u.Hostname() == "":
		ps.addf(path, "%q is not an absolute http(s) URL", s)
	case u.User != nil:
		// Credentials must come from api_key_env; a URL would put them in the database.
		ps.addf(path, "%q must not contain credentials; name them in api_key_env", s)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		// The gateway appends endpoint paths to the base URL, which a query or fragment breaks.
		ps.addf(path, "%q must not have a query or fragment", s)
	}
}

func (ps *problems) checkTimeout(path string, d time.Duration) {
	switch {
	case d < 0:
		ps.addf(path, "%s must be positive", formatDuration(d))
	case d%time.Millisecond != 0:
		ps.addf(path, "%s must be a whole number of milliseconds", formatDuration(d))
	}
}

func (ps *problems) checkModel(path string, m Model, seen map[string]string) {
	ps.checkID(field(path, "id"), m.ID, seen)
	if m.Family == "" {
		ps.addf(field(path, "family"), "is required")
	}
	if m.Priority < math.MinInt32 || m.Priority > maxInt32 {
		ps.addf(field(path, "priority"), "%d is out of range (32-bit integer)", m.Priority)
	}
	if l := m.OutputTokenLimit; l != nil {
		switch {
		case *l <= 0:
			ps.addf(field(path, "output_token_limit"), "%d must be positive", *l)
		case *l > maxInt32:
			ps.addf(field(path, "output_token_limit"), "%d is out of range (32-bit integer)", *l)
		}
	}

	for i, r := range m.Routes {
		rp := index(field(path, "routes"), i)
		ps.checkFamilyList(field(rp, "endpoint_families"), r.EndpointFamilies)
		if r.Provider == "" {
			ps.addf(field(rp, "provider"), "is required")
		}
		if r.UpstreamModel == "" {
			ps.addf(field(rp, "upstream_model"), "is required")
		}
		if r.Priority != nil && (*r.Priority < math.MinInt32 || *r.Priority > maxInt32) {
			ps.addf(field(rp, "priority"), "%d is out of range (32-bit integer)", *r.Priority)
		}
		if r.Weight != nil && (*r.Weight < 1 || *r.Weight > maxWeight) {
			ps.addf(field(rp, "weight"), "%d must be between 1 and %d", *r.Weight, maxWeight)
		}
	}

	pricedBy := map[string]string{}
	for i, p := range m.Prices {
		pp := index(field(path, "prices"), i)
		efPath := field(pp, "endpoint_families")
		ps.checkFamilyList(efPath, p.EndpointFamilies)
		for j, f := range p.EndpointFamilies {
			if !IsEndpointFamily(f) {
				continue
			}
			if first, dup := pricedBy[f]; dup {
				// Reported at the later set only: the earlier one is as valid as it was.
				if first != pp {
					ps.addf(index(efPath, j), "%q is already priced by %s", f, first)
				}
				continue
			}
			pricedBy[f] = pp
		}
		ps.checkPrice(pp, p)
	}

	capabilityAt := map[string]string{}
	for i, c := range m.Capabilities {
		cp := index(field(path, "capabilities"), i)
		ef := field(cp, "endpoint_family")
		switch first, dup := capabilityAt[c.EndpointFamily]; {
		case c.EndpointFamily == "":
			ps.addf(ef, "is required")
		case !IsEndpointFamily(c.EndpointFamily):
			ps.addf(ef, "%q is not an endpoint family; known: %s", c.EndpointFamily, strings.Join(EndpointFamilies, ", "))
		case dup:
			ps.addf(ef, "%q already has a capability entry at %s", c.EndpointFamily, first)
		default:
			capabilityAt[c.EndpointFamily] = cp
		}
		opPath := field(cp, "optional_parameters")
		for j, o := range c.OptionalParameters {
			switch {
			case !IsOptionalParameter(o):
				ps.addf(index(opPath, j), "%q is not an optional parameter; known: %s", o, strings.Join(OptionalParameters, ", "))
			case slices.Index(c.OptionalParameters, o) < j:
				ps.addf(index(opPath, j), "%q is listed twice", o)
			}
		}
		if c.VerifiedAt.IsZero() {
			ps.addf(field(cp, "verified_at"), "is required")
		}
	}
}

// checkFamilyList checks the endpoint_families of a route or price set.
func (ps *problems) checkFamilyList(path string, families []string) {
	if len(families) == 0 {
		ps.addf(path, "must name at least one endpoint family")
		return
	}
	for i, f := range families {
		switch {
		case !IsEndpointFamily(f):
			ps.addf(index(path, i), "%q is not an endpoint family; known: %s", f, strings.Join(EndpointFamilies, ", "))
		case slices.Index(families, f) < i:
			ps.addf(index(path, i), "%q is listed twice", f)
		}
	}
}

func (ps *problems) checkPrice(path string, p Price) {
	var priced []string // token components that carry an amount
	for _, c := range p.components() {
		if *c.amount == nil {
			continue
		}
		if msg := amountProblem(**c.amount); msg != "" {
			ps.addf(field(path, c.name), "%s", msg)
		}
		if c.name != "request" {
			priced = append(priced, c.name)
		}
	}
	switch p.BillingMode {
	case BillingPerToken:
		if len(priced) == 0 {
			ps.addf(path, "per_token needs at least one of input, cached_input, cache_write, output")
		}
		if p.Request != nil {
			ps.addf(field(path, "request"), "must be null for per_token")
		}
	case BillingPerRequest:
		if p.Request == nil {
			ps.addf(field(path, "request"), "is required for per_request")
		}
		for _, name := range priced {
			ps.addf(field(path, name), "must be null for per_request")
		}
	case "":
		ps.addf(field(path, "billing_mode"), "is required")
	default:
		ps.addf(field(path, "billing_mode"), "%s", oneOf(p.BillingMode, BillingModes))
	}
}

type component struct {
	name   string
	amount **decimal.Decimal
}

// components lists a price set's amounts by their document names, in document order, so
// that decoding, checking and rendering cannot disagree about them.
func (p *Price) components() []component {
	return []component{
		{"input", &p.Input},
		{"cached_input", &p.CachedInput},
		{"cache_write", &p.CacheWrite},
		{"output", &p.Output},
		{"request", &p.Request},
		{"audio_input", &p.AudioInput},
		{"audio_output", &p.AudioOutput},
	}
}

// amountProblem describes why d cannot be stored exactly as a price, or returns "". It
// avoids rescaling d until its exponent is known to be small, because a Decimal built in
// code may carry an exponent that would make rescaling allocate without bound.
func amountProblem(d decimal.Decimal) string {
	switch d.Sign() {
	case -1:
		return "must not be negative"
	case 0:
		return ""
	}
	coef, exp := d.Coefficient(), int64(d.Exponent())
	ten, rem := big.NewInt(10), new(big.Int)
	for {
		q, r := new(big.Int).QuoRem(coef, ten, rem)
		if r.Sign() != 0 {
			break
		}
		coef, exp = q, exp+1
	}
	if exp < -maxFractionDigits {
		return fmt.Sprintf("has more than %d fractional digits", maxFractionDigits)
	}
	// Digits before the point = len(coef)+exp; 10^15 itself has 16.
	if int64(len(coef.String()))+exp > 16 || decimal.NewFromBigInt(coef, int32(exp)).GreaterThan(maxAmount) {
		return "exceeds 10^15"
	}
	return ""
}
