package catalog

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"gopkg.in/yaml.v3"
)

// The document is walked as a yaml.Node tree instead of being unmarshalled into structs:
// only the node keeps an amount's literal text (a float64 would turn 0.1 into
// 0.1000000000000000055...), and only a walk knows the path of every field it rejects and
// can go on to report the next problem.

// maxExpandedNodes bounds the work anchors and aliases can cause: a few lines of YAML can
// otherwise stand for billions of nodes. Real catalogs stay far below it.
const maxExpandedNodes = 1 << 20

// maxAmountLiteral bounds an amount's text so that parsing it stays cheap; exact amounts
// need at most 26 characters.
const maxAmountLiteral = 100

// amountLiteral is a plain decimal, as YAML and JSON write one. The exponent form is there
// because JSON encoders write small numbers as 1e-9; its size is bounded for the same
// reason as maxAmountLiteral.
var amountLiteral = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]{1,3})?$`)

type decoder struct {
	problems problems
	// hidden are paths whose value could not be decoded; what Validate finds there (or
	// above, e.g. "needs at least one amount") only repeats the first complaint.
	hidden []string
}

// fail reports a value that could not be decoded.
func (dec *decoder) fail(path, format string, args ...any) {
	dec.problems.addf(path, format, args...)
	dec.hidden = append(dec.hidden, path)
}

// hides reports whether a finding of Validate at path repeats a decoding failure: it
// concerns the failed field, something inside it, or something containing it.
func (dec *decoder) hides(path string) bool {
	for _, h := range dec.hidden {
		if within(path, h) || (path != "" && within(h, path)) {
			return true
		}
	}
	return false
}

func (dec *decoder) document(data []byte) *Document {
	yd := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := yd.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			dec.fail("", "is empty")
		} else {
			dec.fail("", "is not valid YAML or JSON: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		return nil
	}
	// A second document would be ignored silently, so it is refused; a trailing "---" with
	// nothing after it is harmless.
	for {
		var next yaml.Node
		err := yd.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			dec.fail("", "is not valid YAML or JSON: %s", strings.TrimPrefix(err.Error(), "yaml: "))
			return nil
		}
		if content(&next) != nil {
			dec.fail("", "holds more than one YAML document; apply them one by one")
			return nil
		}
	}

	if expandedSize(&root, map[*yaml.Node]int{}) > maxExpandedNodes {
		dec.fail("", "expands to more than %d nodes through anchors and aliases", maxExpandedNodes)
		return nil
	}
	n := content(&root)
	if n == nil {
		dec.fail("", "is empty")
		return nil
	}

	d := &Document{}
	dec.object(n, "", fields{
		"currency": func(v *yaml.Node, p string) { dec.str(v, p, &d.Currency) },
		"prune":    func(v *yaml.Node, p string) { dec.boolean(v, p, &d.Prune) },
		"families": func(v *yaml.Node, p string) {
			dec.list(v, p, func(item *yaml.Node, ip string) {
				var f Family
				dec.object(item, ip, fields{"id": func(v *yaml.Node, p string) { dec.str(v, p, &f.ID) }})
				d.Families = append(d.Families, f)
			})
		},
		"providers": func(v *yaml.Node, p string) {
			dec.list(v, p, func(item *yaml.Node, ip string) { d.Providers = append(d.Providers, dec.provider(item, ip)) })
		},
		"models": func(v *yaml.Node, p string) {
			dec.list(v, p, func(item *yaml.Node, ip string) { d.Models = append(d.Models, dec.model(item, ip)) })
		},
	})
	return d
}

func (dec *decoder) provider(n *yaml.Node, path string) Provider {
	var p Provider
	dec.object(n, path, fields{
		"id":          func(v *yaml.Node, fp string) { dec.str(v, fp, &p.ID) },
		"kind":        func(v *yaml.Node, fp string) { dec.str(v, fp, &p.Kind) },
		"base_url":    func(v *yaml.Node, fp string) { dec.str(v, fp, &p.BaseURL) },
		"api_key_env": func(v *yaml.Node, fp string) { dec.str(v, fp, &p.APIKeyEnv) },
		"timeout": func(v *yaml.Node, fp string) {
			if isNull(v) {
				return
			}
			dec.object(v, fp, fields{
				"first_byte": func(v *yaml.Node, tp string) { dec.duration(v, tp, &p.FirstByteTimeout) },
				"idle":       func(v *yaml.Node, tp string) { dec.duration(v, tp, &p.IdleTimeout) },
			})
		},
	})
	return p
}

func (dec *decoder) model(n *yaml.Node, path string) Model {
	m := Model{Active: true, Streaming: true}
	dec.object(n, path, fields{
		"id":           func(v *yaml.Node, p string) { dec.str(v, p, &m.ID) },
		"display_name": func(v *yaml.Node, p string) { dec.str(v, p, &m.DisplayName) },
		"family":       func(v *yaml.Node, p string) { dec.str(v, p, &m.Family) },
		"owned_by":     func(v *yaml.Node, p string) { dec.str(v, p, &m.OwnedBy) },
		"priority":     func(v *yaml.Node, p string) { dec.integer(v, p, &m.Priority) },
		"active":       func(v *yaml.Node, p string) { dec.boolean(v, p, &m.Active) },
		"output_token_limit": func(v *yaml.Node, p string) {
			var limit int
			if dec.integer(v, p, &limit) {
				m.OutputTokenLimit = &limit
			}
		},
		"streaming": func(v *yaml.Node, p string) { dec.boolean(v, p, &m.Streaming) },
		"routes": func(v *yaml.Node, p string) {
			dec.list(v, p, func(item *yaml.Node, ip string) { m.Routes = append(m.Routes, dec.route(item, ip)) })
		},
		"prices": func(v *yaml.Node, p string) {
			dec.list(v, p, func(item *yaml.Node, ip string) { m.Prices = append(m.Prices, dec.price(item, ip)) })
		},
		"capabilities": func(v *yaml.Node, p string) {
			dec.list(v, p, func(item *yaml.Node, ip string) { m.Capabilities = append(m.Capabilities, dec.capability(item, ip)) })
		},
	})
	for i := range m.Routes {
		if m.Routes[i].UpstreamModel != "" {
			continue
		}
		if m.ID == "" {
			// The missing model id is reported already; a missing upstream_model is its echo.
			dec.hidden = append(dec.hidden, field(index(field(path, "routes"), i), "upstream_model"))
		}
		m.Routes[i].UpstreamModel = m.ID
	}
	return m
}

func (dec *decoder) route(n *yaml.Node, path string) Route {
	var r Route
	dec.object(n, path, fields{
		"endpoint_families": func(v *yaml.Node, p string) { dec.strings(v, p, &r.EndpointFamilies) },
		"provider":          func(v *yaml.Node, p string) { dec.str(v, p, &r.Provider) },
		"upstream_model":    func(v *yaml.Node, p string) { dec.str(v, p, &r.UpstreamModel) },
	})
	return r
}

func (dec *decoder) price(n *yaml.Node, path string) Price {
	var p Price
	fs := fields{
		"endpoint_families": func(v *yaml.Node, fp string) { dec.strings(v, fp, &p.EndpointFamilies) },
		"billing_mode":      func(v *yaml.Node, fp string) { dec.str(v, fp, &p.BillingMode) },
	}
	for _, c := range p.components() {
		fs[c.name] = func(v *yaml.Node, fp string) { dec.amount(v, fp, c.amount) }
	}
	dec.object(n, path, fs)
	return p
}

func (dec *decoder) capability(n *yaml.Node, path string) Capability {
	var c Capability
	listed := false
	ok := dec.object(n, path, fields{
		"endpoint_family": func(v *yaml.Node, p string) { dec.str(v, p, &c.EndpointFamily) },
		"optional_parameters": func(v *yaml.Node, p string) {
			listed = !isNull(v)
			dec.strings(v, p, &c.OptionalParameters)
		},
		"verified_at": func(v *yaml.Node, p string) { dec.timestamp(v, p, &c.VerifiedAt) },
	})
	// Required here rather than in Validate: an empty list claims that no optional parameter
	// works, so forgetting the field must not silently mean that. In Go, nil and empty are
	// the same list.
	if ok && !listed {
		dec.fail(field(path, "optional_parameters"), "is required: list the verified parameters, or [] if none is supported")
	}
	if c.OptionalParameters == nil {
		c.OptionalParameters = []string{}
	}
	return c
}

type fields map[string]func(v *yaml.Node, path string)

// object decodes a mapping whose keys must all be in fs, calling each handler in document
// order. It reports whether n was a mapping at all.
func (dec *decoder) object(n *yaml.Node, path string, fs fields) bool {
	members, ok := dec.members(n, path)
	if !ok {
		return false
	}
	for _, m := range members {
		fp := field(path, m.key)
		if f, known := fs[m.key]; known {
			f(m.value, fp)
		} else {
			dec.problems.addf(fp, "unknown field")
		}
	}
	return true
}

type member struct {
	key   string
	value *yaml.Node
}

// members returns the pairs of a mapping in document order, with merge keys (<<) expanded
// so that YAML authors can share settings between models as usual. Explicit keys win over
// merged ones, and earlier merged mappings over later ones, as YAML specifies.
func (dec *decoder) members(n *yaml.Node, path string) ([]member, bool) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		dec.fail(path, "must be a mapping, not %s", describe(n))
		return nil, false
	}
	var explicit, merged []member
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		switch {
		case k.Kind != yaml.ScalarNode:
			dec.problems.addf(path, "has a key that is %s, not a string", describe(k))
		case k.ShortTag() == "!!merge":
			merged = append(merged, dec.mergeable(v, path)...)
		case seen[k.Value]:
			// YAML forbids this and JSON leaves it undefined; which value was meant is unknowable.
			dec.problems.addf(field(path, k.Value), "appears more than once")
		default:
			seen[k.Value] = true
			explicit = append(explicit, member{k.Value, v})
		}
	}
	for _, m := range merged {
		if !seen[m.key] {
			seen[m.key] = true
			explicit = append(explicit, m)
		}
	}
	return explicit, true
}

func (dec *decoder) mergeable(v *yaml.Node, path string) []member {
	v = deref(v)
	var sources []*yaml.Node
	switch v.Kind {
	case yaml.MappingNode:
		sources = []*yaml.Node{v}
	case yaml.SequenceNode:
		sources = v.Content
	default:
		dec.fail(path, "<< must merge a mapping or a list of mappings, not %s", describe(v))
		return nil
	}
	var out []member
	for _, s := range sources {
		ms, _ := dec.members(s, path)
		out = append(out, ms...)
	}
	return out
}

// list calls each for every item of a sequence; null stands for an empty list.
func (dec *decoder) list(n *yaml.Node, path string, each func(item *yaml.Node, path string)) {
	n = deref(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		dec.fail(path, "must be a list, not %s", describe(n))
		return
	}
	for i, item := range n.Content {
		each(item, index(path, i))
	}
}

func (dec *decoder) strings(n *yaml.Node, path string, dst *[]string) {
	dec.list(n, path, func(item *yaml.Node, ip string) {
		var s string
		dec.str(item, ip, &s)
		*dst = append(*dst, s)
	})
}

// str takes any scalar's literal text, so that an id such as 2024 needs no quotes in
// YAML; null leaves dst as it was.
func (dec *decoder) str(n *yaml.Node, path string, dst *string) {
	n = deref(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.ScalarNode {
		dec.fail(path, "must be a string, not %s", describe(n))
		return
	}
	*dst = n.Value
}

func (dec *decoder) boolean(n *yaml.Node, path string, dst *bool) {
	n = deref(n)
	if isNull(n) {
		return
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		dec.fail(path, "must be true or false, not %s", describe(n))
		return
	}
	*dst = b
}

// integer decodes an integer into dst and reports whether there was one.
func (dec *decoder) integer(n *yaml.Node, path string, dst *int) bool {
	n = deref(n)
	if isNull(n) {
		return false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		dec.fail(path, "must be an integer, not %s", describe(n))
		return false
	}
	var i int
	if err := n.Decode(&i); err != nil {
		dec.fail(path, "%s is out of range", n.Value)
		return false
	}
	*dst = i
	return true
}

// amount accepts a quoted or bare decimal and keeps its exact value; null leaves the
// component unpriced.
func (dec *decoder) amount(n *yaml.Node, path string, dst **decimal.Decimal) {
	n = deref(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.ScalarNode {
		dec.fail(path, "must be a decimal amount, not %s", describe(n))
		return
	}
	d, ok := parseAmount(n.Value)
	if !ok {
		dec.fail(path, "%q is not a decimal amount", n.Value)
		return
	}
	*dst = &d
}

// parseAmount parses an amount literal into its canonical Decimal. Equal amounts get
// identical representations (15.00 and 1.5e1 both become 15), so that a document and its
// JSON rendering decode to deeply equal values.
func parseAmount(s string) (decimal.Decimal, bool) {
	if len(s) > maxAmountLiteral || !amountLiteral.MatchString(s) {
		return decimal.Decimal{}, false
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Decimal{}, false
	}
	canonical, err := decimal.NewFromString(d.String())
	if err != nil {
		return decimal.Decimal{}, false
	}
	return canonical, true
}

func (dec *decoder) duration(n *yaml.Node, path string, dst *time.Duration) {
	n = deref(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.ScalarNode {
		dec.fail(path, "must be a duration, not %s", describe(n))
		return
	}
	d, err := time.ParseDuration(n.Value)
	switch {
	case err != nil:
		dec.fail(path, "%q is not a duration (write it like \"60s\")", n.Value)
	case d <= 0:
		// Zero is how a Provider says "default", so an explicit 0s would silently mean that.
		dec.fail(path, "%q must be positive", n.Value)
	default:
		*dst = d
	}
}

func (dec *decoder) timestamp(n *yaml.Node, path string, dst *time.Time) {
	n = deref(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.ScalarNode {
		dec.fail(path, "must be a timestamp, not %s", describe(n))
		return
	}
	t, err := time.Parse(time.RFC3339, n.Value)
	if err != nil {
		dec.fail(path, "%q is not an RFC 3339 timestamp (write it like \"2026-11-01T00:00:00Z\")", n.Value)
		return
	}
	// The database keeps instants, not offsets; UTC makes equal instants equal values.
	*dst = t.UTC()
}

// content returns the top node of a YAML document, or nil if the document holds nothing.
func content(doc *yaml.Node) *yaml.Node {
	n := doc
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) != 1 {
			return nil
		}
		n = n.Content[0]
	}
	if isNull(n) {
		return nil
	}
	return n
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// describe names what a node is, for messages that say what was expected instead.
func describe(n *yaml.Node) string {
	n = deref(n)
	switch {
	case isNull(n):
		return "null"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	default:
		// Long values are cut: the path already says where, the start says what.
		const maxShown = 40
		s := n.Value
		if r := []rune(s); len(r) > maxShown {
			s = string(r[:maxShown]) + "..."
		}
		return strconv.Quote(s)
	}
}

// expandedSize counts the nodes of n with every alias expanded, stopping early once the
// count passes maxExpandedNodes. An alias that contains itself counts as too many.
func expandedSize(n *yaml.Node, memo map[*yaml.Node]int) int {
	n = deref(n)
	if n == nil {
		return 0
	}
	if size, ok := memo[n]; ok {
		return size
	}
	memo[n] = maxExpandedNodes + 1 // a cycle comes back here before the real size is known
	size := 1
	for _, c := range n.Content {
		if size += expandedSize(c, memo); size > maxExpandedNodes {
			break
		}
	}
	memo[n] = size
	return size
}
