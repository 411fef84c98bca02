package responseswire

// Stream event types. Every event is sent as "event: <type>" plus a data line whose JSON repeats
// the type and carries a sequence_number that starts at 0 and grows by one per event.
const (
	EventCreated    = "response.created"
	EventInProgress = "response.in_progress"
	EventCompleted  = "response.completed"
	EventIncomplete = "response.incomplete"
	EventFailed     = "response.failed"
	EventError      = "error"

	EventOutputItemAdded  = "response.output_item.added"
	EventOutputItemDone   = "response.output_item.done"
	EventContentPartAdded = "response.content_part.added"
	EventContentPartDone  = "response.content_part.done"
	EventOutputTextDelta  = "response.output_text.delta"
	EventOutputTextDone   = "response.output_text.done"

	EventFunctionCallArgumentsDelta = "response.function_call_arguments.delta"
	EventFunctionCallArgumentsDone  = "response.function_call_arguments.done"

	EventReasoningSummaryPartAdded = "response.reasoning_summary_part.added"
	EventReasoningSummaryPartDone  = "response.reasoning_summary_part.done"
	EventReasoningSummaryTextDelta = "response.reasoning_summary_text.delta"
	EventReasoningSummaryTextDone  = "response.reasoning_summary_text.done"
)

// IsTerminal reports whether an event type ends a stream.
func IsTerminal(eventType string) bool {
	switch eventType {
	case EventCompleted, EventIncomplete, EventFailed, EventError:
		return true
	}
	return false
}

// ResponseEvent is a lifecycle event: created, in_progress, completed, incomplete, failed.
type ResponseEvent struct {
	Type           string    `json:"type"`
	SequenceNumber int64     `json:"sequence_number"`
	Response       *Response `json:"response"`
}

// OutputItemEvent is output_item.added and output_item.done.
type OutputItemEvent struct {
	Type           string     `json:"type"`
	SequenceNumber int64      `json:"sequence_number"`
	OutputIndex    int        `json:"output_index"`
	Item           OutputItem `json:"item"`
}

// ContentPartEvent is content_part.added and content_part.done.
type ContentPartEvent struct {
	Type           string     `json:"type"`
	SequenceNumber int64      `json:"sequence_number"`
	ItemID         string     `json:"item_id"`
	OutputIndex    int        `json:"output_index"`
	ContentIndex   int        `json:"content_index"`
	Part           OutputText `json:"part"`
}

// TextDeltaEvent is output_text.delta.
type TextDeltaEvent struct {
	Type           string `json:"type"`
	SequenceNumber int64  `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	ContentIndex   int    `json:"content_index"`
	Delta          string `json:"delta"`
	Logprobs       []any  `json:"logprobs"`
}

// TextDoneEvent is output_text.done.
type TextDoneEvent struct {
	Type           string `json:"type"`
	SequenceNumber int64  `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	ContentIndex   int    `json:"content_index"`
	Text           string `json:"text"`
	Logprobs       []any  `json:"logprobs"`
}

// ArgumentsDeltaEvent is function_call_arguments.delta.
type ArgumentsDeltaEvent struct {
	Type           string `json:"type"`
	SequenceNumber int64  `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	Delta          string `json:"delta"`
}

// ArgumentsDoneEvent is function_call_arguments.done.
type ArgumentsDoneEvent struct {
	Type           string `json:"type"`
	SequenceNumber int64  `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	Name           string `json:"name"`
	Arguments      string `json:"arguments"`
}

// SummaryPartEvent is reasoning_summary_part.added and .done.
type SummaryPartEvent struct {
	Type           string      `json:"type"`
	SequenceNumber int64       `json:"sequence_number"`
	ItemID         string      `json:"item_id"`
	OutputIndex    int         `json:"output_index"`
	SummaryIndex   int         `json:"summary_index"`
	Part           SummaryPart `json:"part"`
}

// SummaryTextDeltaEvent is reasoning_summary_text.delta.
type SummaryTextDeltaEvent struct {
	Type           string `json:"type"`
	SequenceNumber int64  `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	SummaryIndex   int    `json:"summary_index"`
	Delta          string `json:"delta"`
}

// SummaryTextDoneEvent is reasoning_summary_text.done.
type SummaryTextDoneEvent struct {
	Type           string `json:"type"`
	SequenceNumber int64  `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	SummaryIndex   int    `json:"summary_index"`
	Text           string `json:"text"`
}

// ErrorEvent is the top-level "error" event.
type ErrorEvent struct {
	Type           string  `json:"type"`
	SequenceNumber int64   `json:"sequence_number"`
	Code           *string `json:"code"`
	Message        string  `json:"message"`
	Param          *string `json:"param"`
}

// Sequenced is every stream event: the writer numbers events as it sends them.
type Sequenced interface{ SetSequence(n int64) }

func (e *ResponseEvent) SetSequence(n int64)         { e.SequenceNumber = n }
func (e *OutputItemEvent) SetSequence(n int64)       { e.SequenceNumber = n }
func (e *ContentPartEvent) SetSequence(n int64)      { e.SequenceNumber = n }
func (e *TextDeltaEvent) SetSequence(n int64)        { e.SequenceNumber = n }
func (e *TextDoneEvent) SetSequence(n int64)         { e.SequenceNumber = n }
func (e *ArgumentsDeltaEvent) SetSequence(n int64)   { e.SequenceNumber = n }
func (e *ArgumentsDoneEvent) SetSequence(n int64)    { e.SequenceNumber = n }
func (e *SummaryPartEvent) SetSequence(n int64)      { e.SequenceNumber = n }
func (e *SummaryTextDeltaEvent) SetSequence(n int64) { e.SequenceNumber = n }
func (e *SummaryTextDoneEvent) SetSequence(n int64)  { e.SequenceNumber = n }
func (e *ErrorEvent) SetSequence(n int64)            { e.SequenceNumber = n }
