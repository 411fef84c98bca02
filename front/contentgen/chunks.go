package contentgen

import (
	"bytes"
	"encoding/json"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/geminiwire"
)

// pendingToolCall is a tool call whose arguments are still arriving.
type pendingToolCall struct {
	index         int32
	id, name, sig string
	args          strings.Builder
}

// call finds a held tool call; arguments for a call never announced still get one.
func (e *encoder) call(index int32) *pendingToolCall {
	for _, c := range e.calls {
		if c.index == index {
			return c
		}
	}
	c := &pendingToolCall{index: index}
	e.calls = append(e.calls, c)
	return c
}

// accumulate builds the non-streaming answer: consecutive text fragments, and consecutive
// thought fragments, make one part each, as the upstream API returns them.
func (e *encoder) accumulate(p geminiwire.Part) {
	if n := len(e.parts); n > 0 && p.Text != nil && p.FunctionCall == nil {
		last := &e.parts[n-1]
		// A thought part is closed by its signature: what follows starts a new one.
		if last.Text != nil && last.FunctionCall == nil && last.Thought == p.Thought && last.ThoughtSignature == "" {
			s := *last.Text + *p.Text
			last.Text = &s
			last.ThoughtSignature = p.ThoughtSignature
			return
		}
	}
	e.parts = append(e.parts, p)
}

// takeCalls turns the held tool calls into functionCall parts.
func (e *encoder) takeCalls() []geminiwire.Part {
	if len(e.calls) == 0 {
		return nil
	}
	parts := make([]geminiwire.Part, 0, len(e.calls)+1)
	for _, c := range e.calls {
		parts = append(parts, geminiwire.Part{
			FunctionCall:     &geminiwire.FunctionCall{ID: c.id, Name: c.name, Args: argsObject(c.args.String())},
			ThoughtSignature: c.sig,
		})
	}
	e.calls = e.calls[:0]
	return parts
}

// argsObject is the accumulated arguments as the JSON object a functionCall carries. Text
// that is not an object cannot be sent as args: it is wrapped rather than dropped.
func argsObject(s string) json.RawMessage {
	t := strings.TrimSpace(s)
	if t == "" {
		return json.RawMessage(`{}`)
	}
	if t[0] == '{' {
		var b bytes.Buffer
		if json.Compact(&b, []byte(t)) == nil {
			return b.Bytes()
		}
	}
	b, _ := json.Marshal(map[string]string{"_raw": s})
	return b
}

func (e *encoder) response(parts []geminiwire.Part, reason corev1.FinishReason, usage *corev1.Usage) *geminiwire.GenerateContentResponse {
	c := geminiwire.Candidate{Content: &geminiwire.Content{Role: geminiwire.RoleModel, Parts: parts}}
	if reason != corev1.FinishReason_FINISH_REASON_UNSPECIFIED {
		c.FinishReason = finishReason(reason)
	}
	return &geminiwire.GenerateContentResponse{
		Candidates:    []geminiwire.Candidate{c},
		UsageMetadata: usageMetadata(usage),
		ModelVersion:  e.start.GetModel(),
		ResponseID:    e.start.GetId(),
	}
}

// final is the last chunk, or the whole answer: held tool calls, the finish reason (a
// stream that ended without one ended normally: STOP) and usage. An answer without parts
// still gets an empty text part, because simple clients read parts[0].text.
func (e *encoder) final(parts []geminiwire.Part) *geminiwire.GenerateContentResponse {
	parts = append(parts, e.takeCalls()...)
	if len(parts) == 0 {
		parts = []geminiwire.Part{geminiwire.TextPart("")}
	}
	reason := e.finish
	if reason == corev1.FinishReason_FINISH_REASON_UNSPECIFIED {
		reason = corev1.FinishReason_FINISH_REASON_STOP
	}
	return e.response(parts, reason, e.usage)
}

// finishReason maps the canonical reason; tool calls end STOP here, the API has no other.
func finishReason(r corev1.FinishReason) string {
	switch r {
	case corev1.FinishReason_FINISH_REASON_LENGTH:
		return geminiwire.FinishMaxTokens
	case corev1.FinishReason_FINISH_REASON_CONTENT_FILTER:
		return geminiwire.FinishSafety
	case corev1.FinishReason_FINISH_REASON_OTHER:
		return geminiwire.FinishOther
	}
	return geminiwire.FinishStop
}

// usageMetadata renders normalised usage natively: the prompt count includes cached and
// cache-write tokens, candidates exclude thoughts.
func usageMetadata(u *corev1.Usage) *geminiwire.UsageMetadata {
	if u == nil || (!u.GetReliable() && u.GetInputTokens()+u.GetCachedInputTokens()+u.GetCacheWriteTokens()+u.GetOutputTokens() == 0) {
		return nil
	}
	prompt := u.GetInputTokens() + u.GetCachedInputTokens() + u.GetCacheWriteTokens()
	return &geminiwire.UsageMetadata{
		PromptTokenCount:        prompt,
		CandidatesTokenCount:    max(u.GetOutputTokens()-u.GetReasoningTokens(), 0),
		CachedContentTokenCount: u.GetCachedInputTokens(),
		ThoughtsTokenCount:      u.GetReasoningTokens(),
		TotalTokenCount:         prompt + u.GetOutputTokens(),
	}
}
