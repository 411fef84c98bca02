package simulator

import (
	"encoding/json"
)

// POST /v1/chat/completions.

type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessageIn `json:"messages"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Tools               []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice     json.RawMessage `json:"tool_choice"`
	ResponseFormat json.RawMessage `json:"response_format"`
}

type chatMessageIn struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func (q *chatRequest) convo() *convo {
	c := &convo{limit: firstInt(q.MaxCompletionTokens, q.MaxTokens)}
	for _, m := range q.Messages {
		text := textOf(m.Content)
		switch m.Role {
		case "system", "developer":
			c.system(text)
		case "assistant":
			c.assistant(text)
			for _, tc := range m.ToolCalls {
				c.count(tc.Function.Name + tc.Function.Arguments)
			}
		case "tool", "function":
			c.toolResult(text)
		default:
			c.user(text)
		}
	}
	for _, t := range q.Tools {
		if t.Type == "function" || t.Type == "" {
			c.tool(t.Function.Name, t.Function.Parameters)
		}
	}
	c.choice, c.forced = openAIChoice(q.ToolChoice)
	c.format(q.ResponseFormat)
	return c
}

type chatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int `json:"reasoning_tokens"`
		AudioTokens              int `json:"audio_tokens"`
		AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

// newChatUsage: prompt_tokens includes the cached subset, completion_tokens the reasoning.
func newChatUsage(a *answer) chatUsage {
	u := chatUsage{PromptTokens: a.input, CompletionTokens: a.output(), TotalTokens: a.input + a.output()}
	u.PromptTokensDetails.CachedTokens = a.cached
	u.CompletionTokensDetails.ReasoningTokens = a.reasoningTokens()
	return u
}

type chatToolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type chatMessageOut struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content"`
	Refusal          *string        `json:"refusal"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
	Annotations      []any          `json:"annotations"`
}

type chatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []chatChoice `json:"choices"`
	Usage             chatUsage    `json:"usage"`
	ServiceTier       string       `json:"service_tier"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      chatMessageOut  `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

type chatChunk struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Created           int64             `json:"created"`
	Model             string            `json:"model"`
	SystemFingerprint string            `json:"system_fingerprint"`
	Choices           []chatChunkChoice `json:"choices"`
	// Usage is null on every chunk when include_usage is set, absent otherwise.
	Usage json.RawMessage `json:"usage,omitempty"`
}

type chatChunkChoice struct {
	Index        int             `json:"index"`
	Delta        chatDelta       `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type chatDelta struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content,omitempty"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
}

const fingerprint = "fp_simulator"

func chatFinish(a *answer) string {
	switch {
	case a.tool != nil:
		return "tool_calls"
	case a.truncated:
		return "length"
	}
	return "stop"
}

func serveChat(x *exchange) {
	var q chatRequest
	a, ok := x.planned(&q)
	if !ok {
		return
	}
	id := "chatcmpl-sim" + a.id
	if q.Stream {
		streamChat(x, a, &q, id)
		return
	}
	msg := chatMessageOut{Role: "assistant", ReasoningContent: a.reasoningString(), Annotations: []any{}}
	if a.tool != nil {
		msg.ToolCalls = []chatToolCall{{ID: "call_sim" + a.id, Type: "function",
			Function: chatFunction{Name: a.tool.name, Arguments: a.tool.args}}}
	} else {
		msg.Content = ptr(a.textString())
	}
	x.writeJSON(a, a.output(), chatCompletion{
		ID: id, Object: "chat.completion", Created: x.now(), Model: q.Model,
		Choices:     []chatChoice{{Message: msg, FinishReason: chatFinish(a)}},
		Usage:       newChatUsage(a),
		ServiceTier: "default", SystemFingerprint: fingerprint,
	})
}

func streamChat(x *exchange, a *answer, q *chatRequest, id string) {
	includeUsage := q.StreamOptions != nil && q.StreamOptions.IncludeUsage
	created := x.now()
	chunk := func(d chatDelta, finish *string) chatChunk {
		c := chatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: q.Model,
			SystemFingerprint: fingerprint, Choices: []chatChunkChoice{{Delta: d, FinishReason: finish}}}
		if includeUsage {
			c.Usage = json.RawMessage("null")
		}
		return c
	}
	total := len(a.reasoning) + len(a.text)
	if a.tool != nil {
		total += 1 + len(a.tool.fragments)
	}
	s := x.startStream(a, total, "\n\n", openAIMidError)
	s.json("", chunk(chatDelta{Role: "assistant", Content: ptr("")}, nil))
	for _, r := range a.reasoning {
		if !s.step() {
			return
		}
		s.json("", chunk(chatDelta{ReasoningContent: r}, nil))
	}
	for _, t := range a.text {
		if !s.step() {
			return
		}
		s.json("", chunk(chatDelta{Content: ptr(t)}, nil))
	}
	if a.tool != nil {
		if !s.step() {
			return
		}
		s.json("", chunk(chatDelta{ToolCalls: []chatToolCall{{Index: ptr(0), ID: "call_sim" + a.id, Type: "function",
			Function: chatFunction{Name: a.tool.name}}}}, nil))
		for _, f := range a.tool.fragments {
			if !s.step() {
				return
			}
			s.json("", chunk(chatDelta{ToolCalls: []chatToolCall{{Index: ptr(0), Function: chatFunction{Arguments: f}}}}, nil))
		}
	}
	if !s.end() {
		return
	}
	s.json("", chunk(chatDelta{}, ptr(chatFinish(a))))
	if includeUsage {
		s.json("", chatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: q.Model,
			SystemFingerprint: fingerprint, Choices: []chatChunkChoice{}, Usage: mustJSON(newChatUsage(a))})
	}
	s.event("", []byte("[DONE]"))
}
