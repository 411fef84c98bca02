package catalog

import (
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

// What Validate checks, field by field: every problem of a document is collected, each with
// the path of the field it concerns, so that an operator fixes a document in one round.

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
