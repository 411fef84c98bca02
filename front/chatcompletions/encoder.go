package chatcompletions

import (
	"crypto/rand"
	"net/http"
	"strings"
	"time"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/chatwire"
	"modelgateway/front/relay"
)

// Encoder implements relay.Protocol: a streaming request gets data-only SSE chunks, any other
// one chat.completion object.
func (Protocol) Encoder(w http.ResponseWriter, r *http.Request, req *corev1.GenerateRequest) relay.Encoder {
	if req.GetStream() {
		return &streamEncoder{w: w, requestID: relay.HeaderValue(r.Header, "X-Request-Id")}
	}
	return &answerEncoder{w: w, requestID: relay.HeaderValue(r.Header, "X-Request-Id")}
}

// head is what every chunk (or the one object) of an answer repeats.
type head struct {
	id      string
	created int64
	model   string
}

func newHead(s *corev1.Start) head {
	h := head{id: CompletionID(s.GetId()), created: s.GetCreated(), model: s.GetModel()}
	if h.created == 0 {
		h.created = time.Now().Unix()
	}
	return h
}

// CompletionID is the chat id for an upstream id: chat clients expect chatcmpl- ids, and
// every chunk must repeat the same one (the openai-go accumulator rejects a change).
func CompletionID(upstream string) string {
	switch {
	case upstream == "":
		return "chatcmpl-" + rand.Text()
	case strings.HasPrefix(upstream, "chatcmpl-"):
		return upstream
	}
	return "chatcmpl-" + upstream
}

// toolCallID stands in for a tool call id an upstream did not give: the client needs one to
// answer the call.
func toolCallID(id string) string {
	if id != "" {
		return id
	}
	return "call_" + rand.Text()
}

// FinishReason maps a canonical finish reason to finish_reason (translation.md §3). Reasons
// without an equivalent (OTHER, unspecified) read as a natural stop.
func FinishReason(r corev1.FinishReason) string {
	switch r {
	case corev1.FinishReason_FINISH_REASON_LENGTH:
		return chatwire.FinishLength
	case corev1.FinishReason_FINISH_REASON_TOOL_CALLS:
		return chatwire.FinishToolCalls
	case corev1.FinishReason_FINISH_REASON_CONTENT_FILTER:
		return chatwire.FinishContentFilter
	}
	return chatwire.FinishStop
}

// usage renders the canonical usage; a nil one (the upstream never said) renders as zeros.
func usage(u *corev1.Usage) chatwire.Usage {
	return chatwire.NewUsage(u.GetInputTokens(), u.GetCachedInputTokens(), u.GetCacheWriteTokens(), u.GetOutputTokens(), u.GetReasoningTokens())
}
