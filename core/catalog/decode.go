package catalog

import (
	"bytes"
	"errors"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// The document is walked as a yaml.Node tree instead of being unmarshalled into structs:
// only the node keeps an amount's literal text (a float64 would turn 0.1 into
// 0.1000000000000000055...), and only a walk knows the path of every field it rejects and
// can go on to report the next problem.

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
		"id":       func(v *yaml.Node, fp string) { dec.str(v, fp, &p.ID) },
		"kind":     func(v *yaml.Node, fp string) { dec.str(v, fp, &p.Kind) },
		"base_url": func(v *yaml.Node, fp string) { dec.str(v, fp, &p.BaseURL) },
		"api_key_env": func(v *yaml.Node, fp string) {
			// A string, or a list: a pool of credentials (contract.md, "Routing").
			if n := deref(v); n != nil && n.Kind == yaml.SequenceNode {
				dec.strings(v, fp, &p.APIKeyPool)
				if len(p.APIKeyPool) > 0 {
					p.APIKeyEnv = p.APIKeyPool[0]
				} else {
					dec.fail(fp, "must name at least one variable")
				}
				return
			}
			dec.str(v, fp, &p.APIKeyEnv)
		},
		"retry": func(v *yaml.Node, fp string) {
			if isNull(v) {
				return
			}
			r := Retry{Attempts: 1}
			dec.object(v, fp, fields{
				"attempts": func(v *yaml.Node, tp string) { dec.integer(v, tp, &r.Attempts) },
				"backoff":  func(v *yaml.Node, tp string) { dec.duration(v, tp, &r.Backoff) },
			})
			p.Retry = &r
		},
		"cooldown": func(v *yaml.Node, fp string) { dec.duration(v, fp, &p.Cooldown) },
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
		"batch_price_factor": func(v *yaml.Node, p string) {
			dec.amount(v, p, &m.BatchPriceFactor)
			if f := m.BatchPriceFactor; f != nil && f.IsNegative() {
				dec.fail(p, "%s must not be negative", f.String())
			}
		},
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
		"priority": func(v *yaml.Node, p string) {
			var n int
			if dec.integer(v, p, &n) {
				r.Priority = &n
			}
		},
		"weight": func(v *yaml.Node, p string) {
			var n int
			if dec.integer(v, p, &n) {
				r.Weight = &n
			}
		},
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
