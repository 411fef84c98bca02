package simulator

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tidwall/gjson"
)

// The schemas that generateObject, withStructuredOutput and agent output types send: nested
// objects, arrays with a minimum, enums, nullable unions, formats, bounds, $defs references
// (zod and Pydantic emit those) and Gemini's upper-case OpenAPI subset.
var structuredSchemas = []struct{ name, schema string }{
	{"a flat object with every scalar type", `{"type":"object","properties":{"city":{"type":"string"},"temp":{"type":"number"},"days":{"type":"integer"},"sunny":{"type":"boolean"}},"required":["city","temp","days","sunny"],"additionalProperties":false}`},
	{"nested objects, arrays with a minimum, enums", `{"type":"object","properties":{"recipe":{"type":"object","properties":{"name":{"type":"string","minLength":5},"steps":{"type":"array","items":{"type":"string"},"minItems":2},"level":{"type":"string","enum":["easy","hard"]}},"required":["name","steps","level"],"additionalProperties":false}},"required":["recipe"],"additionalProperties":false}`},
	{"nullable unions, formats and bounds", `{"type":"object","properties":{"note":{"anyOf":[{"type":"null"},{"type":"string"}]},"when":{"type":"string","format":"date-time"},"mail":{"type":"string","format":"email"},"score":{"type":"integer","minimum":10,"maximum":20},"ratio":{"type":"number","exclusiveMinimum":0.5,"maximum":3},"id":{"type":"string","format":"uuid"}},"required":["note","when","mail","score","ratio","id"]}`},
	{"references into $defs", `{"$defs":{"person":{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}},"required":["name","age"]}},"type":"object","properties":{"people":{"type":"array","items":{"$ref":"#/$defs/person"},"minItems":1},"boss":{"$ref":"#/$defs/person"}},"required":["people","boss"]}`},
	{"a type list with null", `{"type":"object","properties":{"tags":{"type":["array","null"],"items":{"type":"string"}},"const":{"const":"fixed"}},"required":["tags","const"]}`},
}

func TestStructuredOutputValidatesAgainstTheSchema(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{})
	for _, sc := range structuredSchemas {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			validator := compile(t, sc.schema)
			// Each protocol's way of asking, and where its answer text is.
			requests := []struct{ protocol, path, body, textAt string }{
				{"chat", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"give JSON"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":` + sc.schema + `}}}`, "choices.0.message.content"},
				{"responses", "/v1/responses", `{"model":"m","input":"give JSON","text":{"format":{"type":"json_schema","name":"x","schema":` + sc.schema + `}}}`, `output.#(type=="message").content.0.text`},
				{"messages output_config", "/v1/messages", `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"give JSON"}],"output_config":{"format":{"type":"json_schema","schema":` + sc.schema + `}}}`, "content.0.text"},
				{"messages output_format", "/v1/messages", `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"give JSON"}],"output_format":{"type":"json_schema","schema":` + sc.schema + `}}`, "content.0.text"},
				{"content generation responseJsonSchema", "/v1beta/models/m:generateContent", `{"contents":[{"role":"user","parts":[{"text":"give JSON"}]}],"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":` + sc.schema + `}}`, "candidates.0.content.parts.0.text"},
			}
			for _, rq := range requests {
				raw := mustPost(t, base, rq.path, rq.body)
				text := gjson.GetBytes(raw, rq.textAt).String()
				again := gjson.GetBytes(mustPost(t, base, rq.path, rq.body), rq.textAt).String()
				if text != again {
					t.Errorf("%s: not deterministic: %s then %s", rq.protocol, text, again)
				}
				validate(t, rq.protocol, validator, text)
			}
		})
	}
}

// Streamed, the document arrives in several deltas that concatenate to the same valid JSON.
func TestStructuredOutputStreamsInPieces(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{})
	sc := structuredSchemas[1].schema
	raw := mustPost(t, base, "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"give JSON"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":`+sc+`}}}`)
	var text strings.Builder
	pieces := 0
	for _, ev := range events(t, raw) {
		if d := gjson.GetBytes(ev.Data, "choices.0.delta.content"); d.Exists() && d.String() != "" {
			text.WriteString(d.String())
			pieces++
		}
	}
	if pieces < 2 {
		t.Errorf("the document came in %d piece(s)", pieces)
	}
	validate(t, "chat stream", compile(t, sc), text.String())
}

// Gemini's responseSchema is OpenAPI with upper-case types; json_object mode has no schema.
func TestStructuredOutputWithoutJSONSchema(t *testing.T) {
	t.Parallel()
	_, base := start(t, Options{})
	raw := mustPost(t, base, "/v1beta/models/m:generateContent", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"responseMimeType":"application/json","responseSchema":{"type":"OBJECT","properties":{"n":{"type":"INTEGER"},"list":{"type":"ARRAY","items":{"type":"STRING"},"minItems":"1"}},"required":["n","list"]}}}`)
	text := gjson.GetBytes(raw, "candidates.0.content.parts.0.text").String()
	validate(t, "responseSchema", compile(t, `{"type":"object","properties":{"n":{"type":"integer"},"list":{"type":"array","items":{"type":"string"},"minItems":1}},"required":["n","list"]}`), text)
	raw = mustPost(t, base, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}}`)
	text = gjson.GetBytes(raw, "choices.0.message.content").String()
	validate(t, "json_object", compile(t, `{"type":"object","minProperties":1}`), text)
	// Without a request for JSON the answer is the usual prose.
	raw = mustPost(t, base, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	if text := gjson.GetBytes(raw, "choices.0.message.content").String(); !strings.HasPrefix(text, "Simulated reply") {
		t.Errorf("plain answer %q", text)
	}
}

func compile(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(t *testing.T, what string, s *jsonschema.Schema, text string) {
	t.Helper()
	if !json.Valid([]byte(text)) {
		t.Errorf("%s: the answer is not JSON: %q", what, text)
		return
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(text)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(v); err != nil {
		t.Errorf("%s: %s does not validate: %v", what, text, err)
	}
}
