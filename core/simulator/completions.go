package simulator

import (
	"encoding/json"
	"strings"
)

// POST /v1/completions, the legacy text completion.

type completionRequest struct {
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"`
	MaxTokens     *int            `json:"max_tokens"`
	Stream        bool            `json:"stream"`
	StreamOptions *streamOptions  `json:"stream_options"`
}

// defaultCompletionTokens is the API's max_tokens default for legacy completions.
const defaultCompletionTokens = 16

func (q *completionRequest) convo() *convo {
	c := &convo{limit: defaultCompletionTokens}
	if q.MaxTokens != nil {
		c.limit = *q.MaxTokens
	}
	var one string
	var many []string
	var tokens []int
	var batches [][]int
	switch {
	case json.Unmarshal(q.Prompt, &one) == nil:
		c.user(one)
	case json.Unmarshal(q.Prompt, &many) == nil:
		c.user(strings.Join(many, "\n"))
	case json.Unmarshal(q.Prompt, &tokens) == nil:
		c.textBytes += 4 * len(tokens)
		c.last = turnUser
	case json.Unmarshal(q.Prompt, &batches) == nil:
		for _, b := range batches {
			c.textBytes += 4 * len(b)
		}
		c.last = turnUser
	}
	return c
}

type completion struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	SystemFingerprint string             `json:"system_fingerprint"`
	Choices           []completionChoice `json:"choices"`
	Usage             json.RawMessage    `json:"usage,omitempty"`
}

type completionChoice struct {
	Text         string          `json:"text"`
	Index        int             `json:"index"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type completionUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func completionFinish(a *answer) string {
	if a.truncated {
		return "length"
	}
	return "stop"
}

func serveCompletions(x *exchange) {
	var q completionRequest
	a, ok := x.planned(&q)
	if !ok {
		return
	}
	id := "cmpl-sim" + a.id
	created := x.now()
	usage := mustJSON(completionUsage{a.input, a.output(), a.input + a.output()})
	obj := func(text string, finish *string) completion {
		return completion{ID: id, Object: "text_completion", Created: created, Model: q.Model,
			SystemFingerprint: fingerprint, Choices: []completionChoice{{Text: text, FinishReason: finish}}}
	}
	if !q.Stream {
		c := obj(a.textString(), ptr(completionFinish(a)))
		c.Usage = usage
		x.writeJSON(a, a.output(), c)
		return
	}
	includeUsage := q.StreamOptions != nil && q.StreamOptions.IncludeUsage
	withNull := func(c completion) completion {
		if includeUsage {
			c.Usage = json.RawMessage("null")
		}
		return c
	}
	s := x.startStream(a, len(a.text), "\n\n", openAIMidError)
	for _, t := range a.text {
		if !s.step() {
			return
		}
		s.json("", withNull(obj(t, nil)))
	}
	if !s.end() {
		return
	}
	s.json("", withNull(obj("", ptr(completionFinish(a)))))
	if includeUsage {
		s.json("", completion{ID: id, Object: "text_completion", Created: created, Model: q.Model,
			SystemFingerprint: fingerprint, Choices: []completionChoice{}, Usage: usage})
	}
	s.event("", []byte("[DONE]"))
}
