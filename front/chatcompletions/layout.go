package chatcompletions

import (
	"strconv"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/chatwire"
	"modelgateway/core/wire/jsontext"
	"modelgateway/front/relay"
)

// layout is a translated stream's chunk split around its choice: every chunk repeats the same
// id, object, created and model, so the stream encodes them once and splices each chunk's
// own part in (the role chunk, content deltas, the finish chunk, the usage chunk), instead of
// encoding a whole chunk through reflection each time. Tool call and reasoning chunks, rarer,
// are still encoded whole (streamEncoder.write); the bytes are the same either way.
type layout struct {
	head []byte // {"id":…,"object":…,"created":…,"model":…,"choices":[
	// room is head's memory for usual ids and model names, in the encoder's allocation.
	room [160]byte
}

// Each chunk's bytes after head; a chunk with a choice is choiceHead, the delta's fields, then
// the end with its finish_reason.
const (
	choiceHead = `{"index":0,"delta":{`
	openEnd    = `},"finish_reason":null}],"usage":null}`
)

// init writes what precedes a chunk's choice for the stream's stamp (c's id, object,
// created and model), in the order and escaping of the whole encoding (a test holds the two
// equal): a chunk's fields before choices are these four and no others. l must stay where
// it is (head may point into it).
func (l *layout) init(c chatwire.Chunk) {
	head := append(l.room[:0], `{"id":`...)
	head = jsontext.AppendString(head, c.ID)
	head = jsontext.AppendString(append(head, `,"object":`...), c.Object)
	head = strconv.AppendInt(append(head, `,"created":`...), c.Created, 10)
	head = jsontext.AppendString(append(head, `,"model":`...), c.Model)
	l.head = append(head, `,"choices":[`...)
}

// role is the opening chunk: the assistant role and empty content.
func (l *layout) role(buf []byte) []byte {
	return append(append(append(buf, l.head...), choiceHead...), `"role":"assistant","content":""`+openEnd...)
}

// text is a content delta.
func (l *layout) text(buf []byte, t string) []byte {
	buf = append(append(append(buf, l.head...), choiceHead...), `"content":`...)
	return append(jsontext.AppendString(buf, t), openEnd...)
}

// finish is the chunk with the finish reason and an empty delta; reason is one of the
// chatwire.Finish words, which need no escaping.
func (l *layout) finish(buf []byte, reason string) []byte {
	buf = append(append(append(buf, l.head...), choiceHead...), `},"finish_reason":"`...)
	return append(append(buf, reason...), `"}],"usage":null}`...)
}

// usage is the final chunk: no choices, the usage object of u (nil: zeros) with the cost
// when u has one, as jsontext.Marshal of usage(u) with relay.AddCost writes it (a test holds
// the two equal), without reflection.
func (l *layout) usage(buf []byte, u *corev1.Usage) []byte {
	buf = append(append(buf, l.head...), `],"usage":`...)
	return append(appendUsage(buf, u), '}')
}

// appendUsage writes the usage object of u (nil: zeros), the fields of chatwire.NewUsage
// with both details, and its cost. It reads u's counts itself: NewUsage's two details are
// pointers, which a Usage returned from a call puts on the heap (two allocations per stream).
func appendUsage(buf []byte, u *corev1.Usage) []byte {
	in, cached, write, out := u.GetInputTokens(), u.GetCachedInputTokens(), u.GetCacheWriteTokens(), u.GetOutputTokens()
	prompt := in + cached + write
	buf = strconv.AppendInt(append(buf, `{"prompt_tokens":`...), prompt, 10)
	buf = strconv.AppendInt(append(buf, `,"completion_tokens":`...), out, 10)
	buf = strconv.AppendInt(append(buf, `,"total_tokens":`...), prompt+out, 10)
	buf = strconv.AppendInt(append(buf, `,"prompt_tokens_details":{"cached_tokens":`...), cached, 10)
	if write != 0 {
		buf = strconv.AppendInt(append(buf, `,"cache_write_tokens":`...), write, 10)
	}
	buf = strconv.AppendInt(append(buf, `},"completion_tokens_details":{"reasoning_tokens":`...), u.GetReasoningTokens(), 10)
	buf = append(buf, '}')
	if relay.HasCost(u) {
		buf = append(append(buf, `,"cost":`...), u.GetCost()...)
		buf = strconv.AppendQuote(append(buf, `,"currency":`...), u.GetCurrency())
	}
	return append(buf, '}')
}
