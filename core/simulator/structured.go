package simulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Structured output: when a request asks for JSON (chat's response_format, responses'
// text.format, messages' output_config.format or output_format, content generation's
// responseMimeType with responseJsonSchema or responseSchema), the answer text is one
// deterministic JSON document that validates against the schema, so that generateObject,
// withStructuredOutput and agent output types work on the simulator. Without a schema
// (json_object mode) it is a small object holding the usual reply.

// format reads a {type, schema} format object as the OpenAI and Anthropic protocols send it;
// json_schema may nest the schema one level deeper (chat's {json_schema: {schema}}).
func (c *convo) format(raw json.RawMessage) {
	var f struct {
		Type       string          `json:"type"`
		Schema     json.RawMessage `json:"schema"`
		JSONSchema *struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &f) != nil {
		return
	}
	switch f.Type {
	case "json_object":
		c.jsonOut = true
	case "json_schema":
		c.jsonOut, c.schema = true, f.Schema
		if f.JSONSchema != nil && len(f.JSONSchema.Schema) > 0 {
			c.schema = f.JSONSchema.Schema
		}
	}
}

// jsonDocument is the answer to a JSON request.
func jsonDocument(schema json.RawMessage, seed uint32) string {
	if len(bytes.TrimSpace(schema)) == 0 || string(bytes.TrimSpace(schema)) == "null" {
		return fmt.Sprintf(`{"answer":"Simulated reply %d"}`, seed%1000)
	}
	g := &schemaGen{root: schema}
	var b bytes.Buffer
	g.value(&b, schema, 0)
	return b.String()
}

// schemaGen builds one valid instance of a JSON Schema (or Gemini's OpenAPI subset): every
// declared property in schema order, the first enum or const value, the first anyOf/oneOf
// branch, allOf merged by taking its first object branch, $ref resolved against the root,
// strings, numbers and arrays sized to their bounds.
type schemaGen struct {
	root json.RawMessage
}

type fullSchema struct {
	Ref              string                     `json:"$ref"`
	Type             json.RawMessage            `json:"type"`
	Properties       json.RawMessage            `json:"properties"`
	Items            json.RawMessage            `json:"items"`
	Enum             []json.RawMessage          `json:"enum"`
	Const            json.RawMessage            `json:"const"`
	AnyOf            []json.RawMessage          `json:"anyOf"`
	OneOf            []json.RawMessage          `json:"oneOf"`
	AllOf            []json.RawMessage          `json:"allOf"`
	Format           string                     `json:"format"`
	MinLength        *int                       `json:"minLength"`
	MaxLength        *int                       `json:"maxLength"`
	Minimum          *float64                   `json:"minimum"`
	Maximum          *float64                   `json:"maximum"`
	ExclusiveMinimum json.RawMessage            `json:"exclusiveMinimum"`
	MinItems         json.RawMessage            `json:"minItems"` // a number, or a string in Gemini's subset
	Defs             map[string]json.RawMessage `json:"$defs"`
}

func (g *schemaGen) value(b *bytes.Buffer, raw json.RawMessage, depth int) {
	var s fullSchema
	if json.Unmarshal(raw, &s) != nil || depth > 12 {
		b.WriteString(`"sim"`)
		return
	}
	switch {
	case s.Ref != "":
		if target := g.resolve(s.Ref); target != nil {
			g.value(b, target, depth+1)
			return
		}
		b.WriteString(`null`)
		return
	case len(s.Const) > 0:
		b.Write(s.Const)
		return
	case len(s.Enum) > 0:
		b.Write(s.Enum[0])
		return
	case len(s.AnyOf) > 0:
		g.value(b, firstNonNull(s.AnyOf), depth+1)
		return
	case len(s.OneOf) > 0:
		g.value(b, firstNonNull(s.OneOf), depth+1)
		return
	case len(s.AllOf) > 0 && len(s.Properties) == 0:
		g.value(b, s.AllOf[0], depth+1)
		return
	}
	t := typeName(s.Type)
	if t == "" && len(s.Properties) > 0 {
		t = "object"
	}
	switch t {
	case "object":
		g.object(b, s.Properties, depth)
	case "array":
		n := intOf(s.MinItems)
		b.WriteByte('[')
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			g.value(b, s.Items, depth+1)
		}
		b.WriteByte(']')
	case "integer", "number":
		v := 1.0
		if s.Minimum != nil {
			v = *s.Minimum
		}
		var exMin float64
		if json.Unmarshal(s.ExclusiveMinimum, &exMin) == nil && len(s.ExclusiveMinimum) > 0 {
			v = exMin + 1
		}
		if s.Maximum != nil && v > *s.Maximum {
			v = *s.Maximum
		}
		if t == "integer" {
			fmt.Fprintf(b, "%d", int64(v))
		} else {
			b.Write(mustJSON(v))
		}
	case "boolean":
		b.WriteString("true")
	case "null":
		b.WriteString("null")
	default:
		b.Write(mustJSON(stringFor(&s)))
	}
}

func (g *schemaGen) object(b *bytes.Buffer, props json.RawMessage, depth int) {
	b.WriteByte('{')
	for i, p := range orderedMembers(props) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(mustJSON(p.name))
		b.WriteByte(':')
		g.value(b, p.raw, depth+1)
	}
	b.WriteByte('}')
}

// resolve follows a local reference (#/$defs/X, #/definitions/X, or any JSON pointer).
func (g *schemaGen) resolve(ref string) json.RawMessage {
	path, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	cur := g.root
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if part == "" {
			continue
		}
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		var m map[string]json.RawMessage
		if json.Unmarshal(cur, &m) != nil {
			return nil
		}
		if cur = m[part]; cur == nil {
			return nil
		}
	}
	return cur
}

func stringFor(s *fullSchema) string {
	v := "sim"
	switch s.Format {
	case "date-time":
		v = "2026-01-01T00:00:00Z"
	case "date":
		v = "2026-01-01"
	case "time":
		v = "00:00:00Z"
	case "email":
		v = "sim@example.com"
	case "uri", "url":
		v = "https://example.com/sim"
	case "uuid":
		v = "00000000-0000-4000-8000-000000000000"
	}
	if s.MinLength != nil && len(v) < *s.MinLength {
		v += strings.Repeat("x", *s.MinLength-len(v))
	}
	if s.MaxLength != nil && len(v) > *s.MaxLength {
		v = v[:*s.MaxLength]
	}
	return v
}

func firstNonNull(branches []json.RawMessage) json.RawMessage {
	for _, br := range branches {
		var s fullSchema
		if json.Unmarshal(br, &s) == nil && typeName(s.Type) != "null" {
			return br
		}
	}
	return branches[0]
}

func intOf(raw json.RawMessage) int {
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return n
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		_, _ = fmt.Sscanf(s, "%d", &n)
	}
	return n
}

type member struct {
	name string
	raw  json.RawMessage
}

// orderedMembers lists an object's members in document order (a map would lose it, and
// clients show the answer as written).
func orderedMembers(raw json.RawMessage) []member {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return out
		}
		out = append(out, member{name, v})
	}
	return out
}
