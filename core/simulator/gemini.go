package simulator

import (
	"bytes"
	"encoding/json"
	"strings"
)

// POST /v1beta/models/{model}:generateContent, :streamGenerateContent and :countTokens.

// The REST API accepts lowerCamelCase and snake_case field names, so every field read here has
// both spellings; pick returns whichever was sent.

type geminiRequest struct {
	Contents               []geminiContent   `json:"contents"`
	SystemInstruction      *geminiContent    `json:"systemInstruction"`
	SystemInstructionSnake *geminiContent    `json:"system_instruction"`
	Tools                  []geminiTool      `json:"tools"`
	ToolConfig             *geminiToolConfig `json:"toolConfig"`
	ToolConfigSnake        *geminiToolConfig `json:"tool_config"`
	GenerationConfig       *geminiGenConfig  `json:"generationConfig"`
	GenerationConfigSnake  *geminiGenConfig  `json:"generation_config"`
	// countTokens may wrap a whole generate request.
	GenerateContentRequest      *geminiRequest `json:"generateContentRequest"`
	GenerateContentRequestSnake *geminiRequest `json:"generate_content_request"`
}

type geminiContent struct {
	Role  string         `json:"role"`
	Parts []geminiPartIn `json:"parts"`
}

type geminiPartIn struct {
	Text                  string          `json:"text"`
	FunctionCall          *geminiCall     `json:"functionCall"`
	FunctionCallSnake     *geminiCall     `json:"function_call"`
	FunctionResponse      *geminiCall     `json:"functionResponse"`
	FunctionResponseSnake *geminiCall     `json:"function_response"`
	InlineData            json.RawMessage `json:"inlineData"`
}

type geminiCall struct {
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args"`
	Response json.RawMessage `json:"response"`
}

type geminiTool struct {
	FunctionDeclarations      []geminiDecl `json:"functionDeclarations"`
	FunctionDeclarationsSnake []geminiDecl `json:"function_declarations"`
}

type geminiDecl struct {
	Name                      string          `json:"name"`
	Parameters                json.RawMessage `json:"parameters"`
	ParametersJSONSchema      json.RawMessage `json:"parametersJsonSchema"`
	ParametersJSONSchemaSnake json.RawMessage `json:"parameters_json_schema"`
}

type geminiToolConfig struct {
	FunctionCallingConfig      *geminiCallingConfig `json:"functionCallingConfig"`
	FunctionCallingConfigSnake *geminiCallingConfig `json:"function_calling_config"`
}

type geminiCallingConfig struct {
	Mode                      string   `json:"mode"`
	AllowedFunctionNames      []string `json:"allowedFunctionNames"`
	AllowedFunctionNamesSnake []string `json:"allowed_function_names"`
}

type geminiGenConfig struct {
	MaxOutputTokens         *int            `json:"maxOutputTokens"`
	MaxOutputTokensSnake    *int            `json:"max_output_tokens"`
	ResponseMimeType        string          `json:"responseMimeType"`
	ResponseMimeTypeSnake   string          `json:"response_mime_type"`
	ResponseJSONSchema      json.RawMessage `json:"responseJsonSchema"`
	ResponseJSONSchemaSnake json.RawMessage `json:"response_json_schema"`
	ResponseSchema          json.RawMessage `json:"responseSchema"`
	ResponseSchemaSnake     json.RawMessage `json:"response_schema"`
}

// structured applies a JSON answer request: a schema in either form, or the JSON mime type.
func (g *geminiGenConfig) structured(c *convo) {
	schema := pickRaw(pickRaw(g.ResponseJSONSchema, g.ResponseJSONSchemaSnake), pickRaw(g.ResponseSchema, g.ResponseSchemaSnake))
	mime := g.ResponseMimeType + g.ResponseMimeTypeSnake
	if len(schema) > 0 || strings.HasPrefix(mime, "application/json") {
		c.jsonOut, c.schema = true, schema
	}
}

// pick returns a when it is set, b otherwise.
func pick[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

func pickRaw(a, b json.RawMessage) json.RawMessage {
	if len(a) > 0 {
		return a
	}
	return b
}

func pickSlice[T any](a, b []T) []T {
	if len(a) > 0 {
		return a
	}
	return b
}

func (q *geminiRequest) convo() *convo {
	if inner := pick(q.GenerateContentRequest, q.GenerateContentRequestSnake); inner != nil {
		return inner.convo()
	}
	c := &convo{}
	if g := pick(q.GenerationConfig, q.GenerationConfigSnake); g != nil {
		c.limit = firstInt(g.MaxOutputTokens, g.MaxOutputTokensSnake)
		g.structured(c)
	}
	if si := pick(q.SystemInstruction, q.SystemInstructionSnake); si != nil {
		for _, p := range si.Parts {
			c.system(p.Text)
		}
	}
	for _, m := range q.Contents {
		var text strings.Builder
		var results []string
		for _, p := range m.Parts {
			text.WriteString(p.Text)
			if fc := pick(p.FunctionCall, p.FunctionCallSnake); fc != nil {
				text.WriteString(fc.Name)
				text.Write(fc.Args)
			}
			if fr := pick(p.FunctionResponse, p.FunctionResponseSnake); fr != nil {
				results = append(results, resultText(fr.Response))
			}
		}
		c.turn(m.Role == "model", text.String(), results)
	}
	for _, t := range q.Tools {
		for _, d := range pickSlice(t.FunctionDeclarations, t.FunctionDeclarationsSnake) {
			c.tool(d.Name, pickRaw(d.Parameters, pickRaw(d.ParametersJSONSchema, d.ParametersJSONSchemaSnake)))
		}
	}
	if tc := pick(q.ToolConfig, q.ToolConfigSnake); tc != nil {
		if fc := pick(tc.FunctionCallingConfig, tc.FunctionCallingConfigSnake); fc != nil {
			switch strings.ToUpper(fc.Mode) {
			case "NONE":
				c.choice = "none"
			case "ANY":
				c.choice = "required"
				if names := pickSlice(fc.AllowedFunctionNames, fc.AllowedFunctionNamesSnake); len(names) > 0 {
					c.forced = names[0]
				}
			}
		}
	}
	return c
}

// resultText is what a function response says: the string under the usual wrapper keys
// ({"result": "..."} and the like) or else the compact JSON.
func resultText(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil && len(m) == 1 {
		for _, k := range []string{"result", "output", "content"} {
			var s string
			if v, ok := m[k]; ok && json.Unmarshal(v, &s) == nil {
				return s
			}
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

type geminiResponse struct {
	Candidates    []geminiCandidate `json:"candidates"`
	UsageMetadata geminiUsage       `json:"usageMetadata"`
	ModelVersion  string            `json:"modelVersion"`
	ResponseID    string            `json:"responseId"`
}

type geminiCandidate struct {
	Content      geminiContentOut `json:"content"`
	FinishReason string           `json:"finishReason,omitempty"`
	Index        int              `json:"index"`
}

type geminiContentOut struct {
	Role  string          `json:"role"`
	Parts []geminiPartOut `json:"parts"`
}

type geminiPartOut struct {
	Text             string         `json:"text,omitempty"`
	Thought          bool           `json:"thought,omitempty"`
	FunctionCall     *geminiCallOut `json:"functionCall,omitempty"`
	ThoughtSignature string         `json:"thoughtSignature,omitempty"`
}

type geminiCallOut struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// geminiUsage follows proto JSON: zero counts are omitted, except the always-present ones.
type geminiUsage struct {
	PromptTokenCount        int             `json:"promptTokenCount"`
	CandidatesTokenCount    int             `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount         int             `json:"totalTokenCount"`
	CachedContentTokenCount int             `json:"cachedContentTokenCount,omitempty"`
	ThoughtsTokenCount      int             `json:"thoughtsTokenCount,omitempty"`
	PromptTokensDetails     []modalityCount `json:"promptTokensDetails,omitempty"`
}

type modalityCount struct {
	Modality   string `json:"modality"`
	TokenCount int    `json:"tokenCount"`
}

// newGeminiUsage: promptTokenCount includes the cached part, candidates exclude thoughts.
func newGeminiUsage(a *answer, candidates, thoughts int) geminiUsage {
	return geminiUsage{PromptTokenCount: a.input, CandidatesTokenCount: candidates, ThoughtsTokenCount: thoughts,
		TotalTokenCount: a.input + candidates + thoughts, CachedContentTokenCount: a.cached,
		PromptTokensDetails: []modalityCount{{"TEXT", a.input}}}
}

func geminiFinish(a *answer) string {
	if a.truncated && a.tool == nil {
		return "MAX_TOKENS"
	}
	return "STOP" // Gemini has no tool-call finish reason
}

// geminiPiece is one streamed part with the usage it adds.
type geminiPiece struct {
	part              geminiPartOut
	visible, thoughts int
}

// pieces lays the reply out as stream parts: thoughts, then text words or one whole function
// call; the first part after the thoughts carries the thought signature.
func geminiPieces(a *answer) []geminiPiece {
	var ps []geminiPiece
	for _, r := range a.reasoning {
		ps = append(ps, geminiPiece{part: geminiPartOut{Text: r, Thought: true}, thoughts: 1})
	}
	if a.tool != nil {
		ps = append(ps, geminiPiece{part: geminiPartOut{FunctionCall: &geminiCallOut{a.tool.name, json.RawMessage(a.tool.args)}},
			visible: len(a.tool.fragments)})
	} else {
		for _, t := range a.text {
			ps = append(ps, geminiPiece{part: geminiPartOut{Text: t}, visible: 1})
		}
	}
	if a.d.think && len(ps) > len(a.reasoning) {
		ps[len(a.reasoning)].part.ThoughtSignature = a.signature()
	}
	return ps
}

func serveGenerate(x *exchange) {
	model, method, _ := geminiPath(x.r.URL.Path)
	var q geminiRequest
	a, ok := x.planned(&q)
	if !ok {
		return
	}
	resp := func(parts []geminiPartOut, finish string, u geminiUsage) geminiResponse {
		return geminiResponse{Candidates: []geminiCandidate{{Content: geminiContentOut{"model", parts}, FinishReason: finish}},
			UsageMetadata: u, ModelVersion: model, ResponseID: "sim" + a.id}
	}
	pieces := geminiPieces(a)
	if method == "generateContent" {
		x.writeJSON(a, a.output(), resp(mergeParts(pieces), geminiFinish(a),
			newGeminiUsage(a, a.output()-a.reasoningTokens(), a.reasoningTokens())))
		return
	}
	midError := func(s *streamer) {
		st := a.d.midStatus(503)
		s.json("", struct {
			Error geminiError `json:"error"`
		}{geminiError{st, "simulated mid-stream failure (#sim:error-mid)", geminiStatus(st)}})
	}
	var s *streamer
	if x.r.URL.Query().Get("alt") == "sse" {
		s = x.startStream(a, len(pieces), "\r\n\r\n", midError)
	} else {
		s = x.startArray(a, len(pieces), midError)
	}
	visible, thoughts := 0, 0
	for i, p := range pieces {
		if !s.step() {
			return
		}
		finish := ""
		if i == len(pieces)-1 {
			if !s.end() {
				return
			}
			finish = geminiFinish(a)
		}
		visible += p.visible
		thoughts += p.thoughts
		s.json("", resp([]geminiPartOut{p.part}, finish, newGeminiUsage(a, visible, thoughts)))
	}
	s.close()
}

// mergeParts joins consecutive text pieces of the same kind into one part, as a
// non-streaming answer has them.
func mergeParts(ps []geminiPiece) []geminiPartOut {
	var out []geminiPartOut
	for _, p := range ps {
		n := len(out)
		if n > 0 && p.part.FunctionCall == nil && out[n-1].FunctionCall == nil && out[n-1].Thought == p.part.Thought {
			out[n-1].Text += p.part.Text
			continue
		}
		out = append(out, p.part)
	}
	return out
}

func serveGeminiCount(x *exchange) {
	var q geminiRequest
	a, ok := x.planned(&q)
	if !ok {
		return
	}
	x.writeJSON(nil, 1, struct {
		TotalTokens             int             `json:"totalTokens"`
		CachedContentTokenCount int             `json:"cachedContentTokenCount,omitempty"`
		PromptTokensDetails     []modalityCount `json:"promptTokensDetails"`
	}{a.input, a.cached, []modalityCount{{"TEXT", a.input}}})
}
