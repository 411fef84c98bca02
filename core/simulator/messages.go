package simulator

import (
	"encoding/json"
	"strings"
)

// POST /v1/messages and /v1/messages/count_tokens (Anthropic).

type messagesRequest struct {
	Model     string `json:"model"`
	MaxTokens *int   `json:"max_tokens"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	System json.RawMessage `json:"system"`
	Stream bool            `json:"stream"`
	Tools  []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tool_choice"`
	OutputConfig *struct {
		Format json.RawMessage `json:"format"`
	} `json:"output_config"`
	OutputFormat json.RawMessage `json:"output_format"` // the structured-outputs beta's spelling
}

type anthBlockIn struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking string          `json:"thinking"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Content  json.RawMessage `json:"content"`
}

func (q *messagesRequest) convo() *convo {
	c := &convo{limit: firstInt(q.MaxTokens)}
	c.system(textOf(q.System))
	for _, m := range q.Messages {
		var blocks []anthBlockIn
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			blocks = []anthBlockIn{{Type: "text", Text: s}}
		} else {
			_ = json.Unmarshal(m.Content, &blocks)
		}
		var text strings.Builder
		var results []string
		for _, b := range blocks {
			switch b.Type {
			case "text":
				text.WriteString(b.Text)
			case "thinking":
				text.WriteString(b.Thinking)
			case "tool_use":
				text.WriteString(b.Name)
				text.Write(b.Input)
			case "tool_result":
				results = append(results, textOf(b.Content))
			}
		}
		c.turn(m.Role == "assistant", text.String(), results)
	}
	for _, t := range q.Tools {
		// Server tools (web_search_2025..., bash_...) have no schema and are never called here.
		if len(t.InputSchema) > 0 {
			c.tool(t.Name, t.InputSchema)
		}
	}
	if tc := q.ToolChoice; tc != nil {
		switch tc.Type {
		case "none":
			c.choice = "none"
		case "any":
			c.choice = "required"
		case "tool":
			c.choice, c.forced = "required", tc.Name
		}
	}
	if q.OutputConfig != nil {
		c.format(q.OutputConfig.Format)
	}
	c.format(q.OutputFormat)
	return c
}

type anthUsage struct {
	InputTokens              int    `json:"input_tokens"`
	CacheCreationInputTokens int    `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int    `json:"cache_read_input_tokens"`
	OutputTokens             int    `json:"output_tokens"`
	ServiceTier              string `json:"service_tier,omitempty"`
}

// newAnthUsage reports the cached part as cache reads and only the rest as input_tokens.
func newAnthUsage(a *answer, output int) anthUsage {
	return anthUsage{InputTokens: a.input - a.cached, CacheReadInputTokens: a.cached, OutputTokens: output}
}

type anthMessage struct {
	ID           string    `json:"id"`
	Type         string    `json:"type"`
	Role         string    `json:"role"`
	Model        string    `json:"model"`
	Content      []any     `json:"content"`
	StopReason   *string   `json:"stop_reason"`
	StopSequence *string   `json:"stop_sequence"`
	Usage        anthUsage `json:"usage"`
}

type anthText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anthThinking struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type anthToolUse struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type anthEvent struct {
	Type         string       `json:"type"`
	Message      *anthMessage `json:"message,omitempty"`
	Index        *int         `json:"index,omitempty"`
	ContentBlock any          `json:"content_block,omitempty"`
	Delta        any          `json:"delta,omitempty"`
	Usage        *anthUsage   `json:"usage,omitempty"`
}

type anthDelta struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	Thinking    *string `json:"thinking,omitempty"`
	Signature   *string `json:"signature,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
}

type anthStop struct {
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

func anthStopReason(a *answer) string {
	switch {
	case a.tool != nil:
		return "tool_use"
	case a.truncated:
		return "max_tokens"
	}
	return "end_turn"
}

// hasText tells whether the reply has a text block: always unless it is a tool call or the
// whole budget went to thinking.
func (a *answer) hasText() bool {
	return a.tool == nil && (len(a.text) > 0 || len(a.reasoning) == 0)
}

func serveMessages(x *exchange) {
	var q messagesRequest
	a, ok := x.planned(&q)
	if !ok {
		return
	}
	if q.Stream {
		streamMessages(x, a, q.Model)
		return
	}
	var content []any
	if len(a.reasoning) > 0 {
		content = append(content, anthThinking{"thinking", a.reasoningString(), a.signature()})
	}
	if a.hasText() {
		content = append(content, anthText{"text", a.textString()})
	}
	if a.tool != nil {
		content = append(content, anthToolUse{"tool_use", "toolu_sim" + a.id, a.tool.name, json.RawMessage(a.tool.args)})
	}
	u := newAnthUsage(a, a.output())
	u.ServiceTier = "standard"
	x.writeJSON(a, a.output(), anthMessage{ID: "msg_sim" + a.id, Type: "message", Role: "assistant", Model: q.Model,
		Content: content, StopReason: ptr(anthStopReason(a)), Usage: u})
}

func streamMessages(x *exchange, a *answer, model string) {
	midError := func(s *streamer) {
		st := a.d.midStatus(529)
		s.json("error", struct {
			Type  string         `json:"type"`
			Error anthropicError `json:"error"`
		}{"error", anthropicError{anthropicErrorType(st), "simulated mid-stream failure (#sim:error-mid)"}})
	}
	s := x.startStream(a, a.output(), "\n\n", midError)
	send := func(e anthEvent) { s.json(e.Type, e) }
	u := newAnthUsage(a, 1)
	send(anthEvent{Type: "message_start", Message: &anthMessage{ID: "msg_sim" + a.id, Type: "message", Role: "assistant",
		Model: model, Content: []any{}, Usage: u}})
	index := 0
	// block runs one content block: start, a delta per piece (each one paced), then stop.
	block := func(start any, pieces []string, delta func(string) anthDelta, last *anthDelta) bool {
		i := ptr(index)
		index++
		send(anthEvent{Type: "content_block_start", Index: i, ContentBlock: start})
		if *i == 0 {
			send(anthEvent{Type: "ping"})
		}
		for _, p := range pieces {
			if !s.step() {
				return false
			}
			send(anthEvent{Type: "content_block_delta", Index: i, Delta: delta(p)})
		}
		if last != nil {
			send(anthEvent{Type: "content_block_delta", Index: i, Delta: *last})
		}
		send(anthEvent{Type: "content_block_stop", Index: i})
		return true
	}
	if len(a.reasoning) > 0 {
		sig := anthDelta{Type: "signature_delta", Signature: ptr(a.signature())}
		if !block(anthThinking{Type: "thinking"}, a.reasoning,
			func(p string) anthDelta { return anthDelta{Type: "thinking_delta", Thinking: ptr(p)} }, &sig) {
			return
		}
	}
	if a.hasText() {
		if !block(anthText{Type: "text"}, a.text,
			func(p string) anthDelta { return anthDelta{Type: "text_delta", Text: ptr(p)} }, nil) {
			return
		}
	}
	if a.tool != nil {
		start := anthToolUse{"tool_use", "toolu_sim" + a.id, a.tool.name, json.RawMessage("{}")}
		if !block(start, a.tool.fragments,
			func(p string) anthDelta { return anthDelta{Type: "input_json_delta", PartialJSON: ptr(p)} }, nil) {
			return
		}
	}
	if !s.end() {
		return
	}
	final := newAnthUsage(a, a.output())
	send(anthEvent{Type: "message_delta", Delta: anthStop{StopReason: anthStopReason(a)}, Usage: &final})
	send(anthEvent{Type: "message_stop"})
}

func serveCountTokens(x *exchange) {
	var q messagesRequest
	a, ok := x.planned(&q)
	if !ok {
		return
	}
	x.writeJSON(nil, 1, struct {
		InputTokens int `json:"input_tokens"`
	}{a.input})
}
