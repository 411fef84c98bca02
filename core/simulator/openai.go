package simulator

import (
	"encoding/json"
	"strings"
)

// Wire pieces shared by the OpenAI routes.

// textOf reads OpenAI/Anthropic content: a string, or an array of parts whose text parts
// (text, input_text, output_text) are concatenated; other parts carry no text.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// openAIChoice reads tool_choice: "none"/"auto"/"required", or an object naming a function
// (chat nests the name in "function", responses has it flat).
func openAIChoice(raw json.RawMessage) (mode, name string) {
	if json.Unmarshal(raw, &mode) == nil {
		return mode, ""
	}
	var o struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Mode     string `json:"mode"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	_ = json.Unmarshal(raw, &o)
	if o.Type == "allowed_tools" {
		return o.Mode, ""
	}
	if o.Function.Name != "" {
		return "required", o.Function.Name
	}
	return "required", o.Name
}

// streamOptions is the stream_options object of chat and legacy completions.
type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// openAIMidError is the chat/completions mid-stream error: a data line whose object has a
// top-level error key, after which the stream ends without [DONE].
func openAIMidError(s *streamer) {
	st := s.a.d.midStatus(500)
	s.json("", struct {
		Error openAIError `json:"error"`
	}{newOpenAIError(st, "simulated mid-stream failure (#sim:error-mid)")})
}

// firstInt returns the first limit that is set.
func firstInt(ps ...*int) int {
	for _, p := range ps {
		if p != nil {
			return *p
		}
	}
	return 0
}

// ptr returns a pointer to v, for optional wire fields.
func ptr[T any](v T) *T { return &v }
