package chatcompletions

import (
	"strconv"

	"modelgateway/core/wire/chatwire"
	"modelgateway/core/wire/jsontext"
)

// layout is a translated stream's chunk split around its choice: every chunk repeats the same
// id, object, created and model, so the stream encodes them once and splices each chunk's
// own part in (the role chunk, content deltas, the finish chunk, the usage chunk), instead of
// encoding a whole chunk through reflection each time. Tool call and reasoning chunks, rarer,
// are still encoded whole (streamEncoder.write); the bytes are the same either way.
type layout struct {
	head []byte // {"id":…,"object":…,"created":…,"model":…,"choices":[
}

// Each chunk's bytes after head; a chunk with a choice is choiceHead, the delta's fields, then
// the end with its finish_reason.
const (
	choiceHead = `{"index":0,"delta":{`
	openEnd    = `},"finish_reason":null}],"usage":null}`
)

// newLayout writes what precedes a chunk's choice for the stream's stamp (c's id, object,
// created and model), in the order and escaping of the whole encoding (a test holds the two
// equal): a chunk's fields before choices are these four and no others.
func newLayout(c chatwire.Chunk) layout {
	head := append(make([]byte, 0, 64+len(c.ID)+len(c.Model)), `{"id":`...)
	head = jsontext.AppendString(head, c.ID)
	head = jsontext.AppendString(append(head, `,"object":`...), c.Object)
	head = strconv.AppendInt(append(head, `,"created":`...), c.Created, 10)
	head = jsontext.AppendString(append(head, `,"model":`...), c.Model)
	return layout{head: append(head, `,"choices":[`...)}
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

// usage is the final chunk: no choices, the usage object (raw JSON).
func (l *layout) usage(buf, raw []byte) []byte {
	buf = append(append(append(buf, l.head...), `],"usage":`...), raw...)
	return append(buf, '}')
}
