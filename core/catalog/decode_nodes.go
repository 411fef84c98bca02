package catalog

// The generic half of the decoder: YAML nodes to Go values (mappings with known keys, merge
// keys, lists, scalars, exact amounts, durations, timestamps), each failure reported with
// its path. decode.go walks the document's own shape with them.

import (
	"regexp"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
	"gopkg.in/yaml.v3"
)

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
