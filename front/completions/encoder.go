package completions

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"strings"
	"time"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/chatwire"
	"modelgateway/core/wire/jsontext"
	"modelgateway/front/relay"
)

// Encoder implements relay.Protocol. The route never streams (Decode refuses stream:true), so
// there is one encoder: the text_completion object, written in Finish.
func (Protocol) Encoder(w http.ResponseWriter, r *http.Request, _ *corev1.GenerateRequest) relay.Encoder {
	return &encoder{w: w, requestID: r.Header.Get("X-Request-Id")}
}

type encoder struct {
	w         http.ResponseWriter
	requestID string
	start     *corev1.Start
	pt        relay.Passthrough
	text      strings.Builder
	finish    string
	usage     *corev1.Usage
}

// Start implements relay.Encoder.
func (e *encoder) Start(s *corev1.Start) error {
	e.start = s
	e.pt.Start(s)
	return nil
}

// Event implements relay.Encoder. Reasoning and tool calls have no place in a text completion
// and are dropped.
func (e *encoder) Event(ev *corev1.GenerateEvent) error {
	if e.pt.Event(ev) {
		return nil
	}
	switch x := ev.GetEvent().(type) {
	case *corev1.GenerateEvent_Text:
		e.text.WriteString(x.Text.GetText())
	case *corev1.GenerateEvent_Finish:
		e.finish = FinishReason(x.Finish.GetReason())
	case *corev1.GenerateEvent_Usage:
		e.usage = x.Usage
	}
	return nil
}

// Finish implements relay.Encoder.
func (e *encoder) Finish() error {
	if done, err := e.pt.Finish(e.w); done {
		return err
	}
	u := e.usage
	usage, err := jsontext.Marshal(chatwire.NewUsage(u.GetInputTokens(), u.GetCachedInputTokens(), u.GetCacheWriteTokens(), u.GetOutputTokens(), u.GetReasoningTokens()))
	if err != nil {
		return fmt.Errorf("encoding usage: %w", err)
	}
	finish := e.finish
	if finish == "" {
		finish = chatwire.FinishStop
	}
	created := e.start.GetCreated()
	if created == 0 {
		created = time.Now().Unix()
	}
	body, err := jsontext.Marshal(chatwire.TextCompletion{
		ID: completionID(e.start.GetId()), Object: chatwire.ObjectTextCompletion, Created: created,
		Model: e.start.GetModel(), Usage: usage,
		Choices: []chatwire.TextChoice{{Text: e.text.String(), FinishReason: &finish}},
	})
	if err != nil {
		return fmt.Errorf("encoding the text completion: %w", err)
	}
	relay.WriteAnswer(e.w, body)
	return nil
}

// Fail implements relay.Encoder; the relay writes the envelope itself for this non-streaming
// route, this only covers a caller that does not.
func (e *encoder) Fail(se *corev1.StreamError) {
	apierror.Write(e.w, e.requestID, &apierror.Error{Code: se.GetCode(), Message: se.GetMessage()})
}

// FinishReason maps a canonical finish reason to the legacy values stop, length and
// content_filter; a tool call, which this route cannot ask for, reads as stop.
func FinishReason(r corev1.FinishReason) string {
	switch r {
	case corev1.FinishReason_FINISH_REASON_LENGTH:
		return chatwire.FinishLength
	case corev1.FinishReason_FINISH_REASON_CONTENT_FILTER:
		return chatwire.FinishContentFilter
	}
	return chatwire.FinishStop
}

// completionID gives the legacy cmpl- prefix to an upstream id, or makes one.
func completionID(upstream string) string {
	switch {
	case upstream == "":
		return "cmpl-" + rand.Text()
	case strings.HasPrefix(upstream, "cmpl-"):
		return upstream
	}
	return "cmpl-" + upstream
}
