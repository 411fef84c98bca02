package messageswire

// Stream event names; the JSON "type" of each event equals its SSE event name.
const (
	EventMessageStart      = "message_start"
	EventContentBlockStart = "content_block_start"
	EventContentBlockDelta = "content_block_delta"
	EventContentBlockStop  = "content_block_stop"
	EventMessageDelta      = "message_delta"
	EventMessageStop       = "message_stop"
	EventPing              = "ping"
	EventError             = "error"
)

// Delta types of content_block_delta.
const (
	DeltaText      = "text_delta"
	DeltaInputJSON = "input_json_delta"
	DeltaThinking  = "thinking_delta"
	DeltaSignature = "signature_delta"
	DeltaCitations = "citations_delta"
)

// StreamEvent is the union of every stream event, for decoding an upstream stream. Index is
// the content block index of the content_block_* events.
type StreamEvent struct {
	Type         string        `json:"type"`
	Message      *Message      `json:"message,omitempty"`
	Index        int           `json:"index"`
	ContentBlock *ContentBlock `json:"content_block,omitempty"`
	Delta        *Delta        `json:"delta,omitempty"`
	Usage        *Usage        `json:"usage,omitempty"`
	Error        *ErrorBody    `json:"error,omitempty"`
}

// Delta is the delta of content_block_delta (Type set) or of message_delta (StopReason,
// StopSequence).
type Delta struct {
	Type         string  `json:"type,omitempty"`
	Text         string  `json:"text,omitempty"`
	PartialJSON  string  `json:"partial_json,omitempty"`
	Thinking     string  `json:"thinking,omitempty"`
	Signature    string  `json:"signature,omitempty"`
	StopReason   *string `json:"stop_reason,omitempty"`
	StopSequence *string `json:"stop_sequence,omitempty"`
}

// The encoding side: one struct per event, so that every required key is written, including
// index 0 and empty strings.

// MessageStartEvent opens a stream.
type MessageStartEvent struct {
	Type    string  `json:"type"`
	Message Message `json:"message"`
}

// ContentBlockStartEvent opens block Index.
type ContentBlockStartEvent struct {
	Type         string       `json:"type"`
	Index        int          `json:"index"`
	ContentBlock ContentBlock `json:"content_block"`
}

// ContentBlockStopEvent closes block Index.
type ContentBlockStopEvent struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

// TextDeltaEvent, InputJSONDeltaEvent, ThinkingDeltaEvent and SignatureDeltaEvent are the
// content_block_delta events.
type (
	TextDeltaEvent struct {
		Type  string    `json:"type"`
		Index int       `json:"index"`
		Delta TextDelta `json:"delta"`
	}
	InputJSONDeltaEvent struct {
		Type  string         `json:"type"`
		Index int            `json:"index"`
		Delta InputJSONDelta `json:"delta"`
	}
	ThinkingDeltaEvent struct {
		Type  string        `json:"type"`
		Index int           `json:"index"`
		Delta ThinkingDelta `json:"delta"`
	}
	SignatureDeltaEvent struct {
		Type  string         `json:"type"`
		Index int            `json:"index"`
		Delta SignatureDelta `json:"delta"`
	}
)

// The deltas themselves.
type (
	TextDelta struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	InputJSONDelta struct {
		Type        string `json:"type"`
		PartialJSON string `json:"partial_json"`
	}
	ThinkingDelta struct {
		Type     string `json:"type"`
		Thinking string `json:"thinking"`
	}
	SignatureDelta struct {
		Type      string `json:"type"`
		Signature string `json:"signature"`
	}
)

// MessageDeltaEvent carries the stop reason and the final cumulative usage.
type MessageDeltaEvent struct {
	Type  string       `json:"type"`
	Delta MessageDelta `json:"delta"`
	Usage Usage        `json:"usage"`
}

// MessageDelta always writes both keys; null is a legal final value.
type MessageDelta struct {
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// MessageStopEvent ends a stream.
type MessageStopEvent struct {
	Type string `json:"type"`
}
