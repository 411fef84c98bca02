package chatcompletions

import (
	"cmp"
	"fmt"
	"net/http"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/chatwire"
	"modelgateway/core/wire/jsontext"
	"modelgateway/front/relay"
)

// answerEncoder collects a non-streaming answer and writes it in Finish: the upstream's own
// body on passthrough, else a chat.completion built from the events.
type answerEncoder struct {
	w         http.ResponseWriter
	requestID string
	pt        relay.Passthrough
	head      head

	text, reasoning strings.Builder
	tools           []chatwire.ToolCall
	toolPos         map[int32]int // canonical tool index → position in tools
	finish          string
	usage           *corev1.Usage
}

// Start implements relay.Encoder.
func (e *answerEncoder) Start(s *corev1.Start) error {
	e.pt.Start(s)
	e.head = newHead(s)
	return nil
}

// Event implements relay.Encoder.
func (e *answerEncoder) Event(ev *corev1.GenerateEvent) error {
	if e.pt.Event(ev) {
		return nil
	}
	switch x := ev.GetEvent().(type) {
	case *corev1.GenerateEvent_Text:
		e.text.WriteString(x.Text.GetText())
	case *corev1.GenerateEvent_Reasoning:
		e.reasoning.WriteString(x.Reasoning.GetText())
	case *corev1.GenerateEvent_ToolCall:
		if e.toolPos == nil {
			e.toolPos = map[int32]int{}
		}
		tc := x.ToolCall
		e.toolPos[tc.GetIndex()] = len(e.tools)
		e.tools = append(e.tools, chatwire.ToolCall{ID: toolCallID(tc.GetId()), Type: "function",
			Function: chatwire.FunctionCall{Name: tc.GetName()}})
	case *corev1.GenerateEvent_ToolArguments:
		i, ok := e.toolPos[x.ToolArguments.GetIndex()]
		if !ok {
			return fmt.Errorf("arguments for tool call %d, which never started", x.ToolArguments.GetIndex())
		}
		e.tools[i].Function.Arguments += x.ToolArguments.GetArguments()
	case *corev1.GenerateEvent_Finish:
		e.finish = FinishReason(x.Finish.GetReason())
	case *corev1.GenerateEvent_Usage:
		e.usage = x.Usage
	}
	return nil
}

// Finish implements relay.Encoder.
func (e *answerEncoder) Finish() error {
	if done, err := e.pt.Finish(e.w); done {
		return err
	}
	msg := chatwire.AnswerMessage{Role: "assistant", ToolCalls: e.tools}
	// content is null when the answer is only tool calls, as OpenAI sends it.
	if text := e.text.String(); text != "" || len(e.tools) == 0 {
		msg.Content = &text
	}
	if r := e.reasoning.String(); r != "" {
		msg.ReasoningContent = &r
	}
	for i := range msg.ToolCalls {
		a := &msg.ToolCalls[i].Function.Arguments
		*a = cmp.Or(*a, "{}")
	}
	u, err := jsontext.Marshal(usage(e.usage))
	if err != nil {
		return fmt.Errorf("encoding usage: %w", err)
	}
	body, err := jsontext.Marshal(chatwire.Completion{
		ID: e.head.id, Object: chatwire.ObjectCompletion, Created: e.head.created, Model: e.head.model,
		Choices: []chatwire.Choice{{Message: msg, FinishReason: cmp.Or(e.finish, chatwire.FinishStop)}},
		Usage:   u,
	})
	if err != nil {
		return fmt.Errorf("encoding the chat completion: %w", err)
	}
	relay.WriteAnswer(e.w, body)
	return nil
}

// Fail implements relay.Encoder. The relay writes the error envelope itself for
// non-streaming requests; this only covers a caller that does not.
func (e *answerEncoder) Fail(se *corev1.StreamError) {
	apierror.Write(e.w, e.requestID, &apierror.Error{Code: se.GetCode(), Message: se.GetMessage()})
}
