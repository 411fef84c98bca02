package simulator

import (
	"bytes"
	"encoding/json"
	"strings"
)

// schema is the part of a JSON Schema (or Gemini's OpenAPI subset, whose type names are upper
// case) needed to build a valid example value.
type schema struct {
	Type       json.RawMessage            `json:"type"` // a name or a list of names
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
	Enum       []json.RawMessage          `json:"enum"`
	Const      json.RawMessage            `json:"const"`
	AnyOf      []json.RawMessage          `json:"anyOf"`
	OneOf      []json.RawMessage          `json:"oneOf"`
}

// argsFor builds deterministic arguments for a tool: an object with the schema's required
// properties set to simple values ("sim", 1, true, [], nested objects likewise).
func argsFor(raw json.RawMessage) string {
	var b bytes.Buffer
	writeObject(&b, raw, 0)
	return b.String()
}

func writeObject(b *bytes.Buffer, raw json.RawMessage, depth int) {
	var s schema
	_ = json.Unmarshal(raw, &s)
	b.WriteByte('{')
	for i, name := range s.Required {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(mustJSON(name))
		b.WriteByte(':')
		writeValue(b, s.Properties[name], depth+1)
	}
	b.WriteByte('}')
}

func writeValue(b *bytes.Buffer, raw json.RawMessage, depth int) {
	var s schema
	if json.Unmarshal(raw, &s) != nil || depth > 8 {
		b.WriteString(`"sim"`)
		return
	}
	switch {
	case len(s.Const) > 0:
		b.Write(s.Const)
		return
	case len(s.Enum) > 0:
		b.Write(s.Enum[0])
		return
	case len(s.AnyOf) > 0:
		writeValue(b, s.AnyOf[0], depth+1)
		return
	case len(s.OneOf) > 0:
		writeValue(b, s.OneOf[0], depth+1)
		return
	}
	switch typeName(s.Type) {
	case "number", "integer":
		b.WriteString("1")
	case "boolean":
		b.WriteString("true")
	case "array":
		b.WriteString("[]")
	case "object":
		writeObject(b, raw, depth)
	case "null":
		b.WriteString("null")
	default:
		b.WriteString(`"sim"`)
	}
}

// typeName is the lower-case type, the first non-null one of a type list.
func typeName(raw json.RawMessage) string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return strings.ToLower(one)
	}
	var many []string
	_ = json.Unmarshal(raw, &many)
	for _, t := range many {
		if t != "null" {
			return strings.ToLower(t)
		}
	}
	return ""
}
