// Package yamljson converts a YAML document to JSON for routes whose JSON form is the contract
// (the catalogue document may be posted as YAML). Fractional numbers become strings holding
// their literal text: the JSON route stores them through float64, and money must stay exact.
package yamljson

import (
	"encoding/json"
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"
)

// Convert turns one YAML document into JSON.
func Convert(data []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	if len(doc.Content) == 0 {
		return nil, errors.New("empty YAML document")
	}
	v, err := value(doc.Content[0], 0)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func value(n *yaml.Node, depth int) (any, error) {
	if depth > 64 {
		return nil, errors.New("YAML nested too deeply")
	}
	switch n.Kind {
	case yaml.AliasNode:
		return value(n.Alias, depth+1)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := value(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		a := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := value(c, depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		return a, nil
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil, nil
		case "!!bool":
			var b bool
			err := n.Decode(&b)
			return b, err
		case "!!int":
			return json.Number(n.Value), nil
		case "!!float":
			return n.Value, nil
		}
		return n.Value, nil
	}
	return nil, fmt.Errorf("unsupported YAML node at line %d", n.Line)
}
