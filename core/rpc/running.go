package rpc

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strings"

	"github.com/tidwall/gjson"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/lazyflush"
)

// running counts a streamed answer's usage as it passes, so that no answer delivers more
// than its profile can pay for (contract: "Where spec.md leaves a choice"). Until the upstream
// reports its usage at the end, the output is bounded from above by the bytes of content
// delivered: no tokenizer makes a token of less than one byte of the text it decodes to, so
// the bytes of text, reasoning, tool names and arguments delivered are at least the tokens
// they cost. Before an event goes to the client, the hold must cover the input it was sized
// for and the output with that event; when it does not, the hold grows (billed.growHold) in
// steps, and when the profile cannot pay for the next step the answer ends there with
// insufficient_balance, the event not delivered.
//
// The check on each event is integer arithmetic on token counts; the ledger is asked only when
// the count passes what the hold covers, and a growth covers twice the output at least
// (growAhead), so that a long answer grows its hold a few times, not once per chunk.
type running struct {
	b *billed
	// input is the input the hold is sized for: the request's estimate, or the upstream's
	// own count at the start when that is larger.
	input int64
	// output is the upper bound of the output delivered so far, in tokens.
	output int64
	// coverIn, coverOut: the usage the hold covers at the price's worst-case rates.
	coverIn, coverOut int64
	// tight: a growth ahead was refused; later growths ask for the next step only.
	tight bool
	// native: a passthrough event has been counted (only the first is read for an input
	// count).
	native bool
	// flush is flushed before the ledger is asked: a growth may wait for the database, and
	// what the client has been written goes out before any wait. A flush that fails (the
	// client has gone) is seen by the next send. Nil (a stream not coalesced) does nothing.
	flush *lazyflush.Writer
	// env is where the count of the last passthrough chunk stood after its opening bytes,
	// which the next chunk likely shares (content.go).
	env envelope
}

// growStep is the least output, in tokens, a growth covers beyond what has been delivered.
const growStep = 256

// newRunning starts the count of an answer whose hold covers input and output tokens.
// Nil (nothing counted) for an answer whose price does not depend on its length.
func (b *billed) newRunning(input, output int64) *running {
	if !b.money.Holding() || b.money.Price().PerRequest {
		return nil
	}
	// In the request's own allocation: an answer has one count.
	b.run = running{b: b, input: input, coverIn: input, coverOut: output}
	return &b.run
}

// pass counts ev as delivered and makes the hold cover it: nil when the client may be sent
// ev, else the insufficient_balance (or unavailable) error that ends the answer before it.
func (r *running) pass(ev *corev1.GenerateEvent) *apierror.Error {
	if r == nil {
		return nil
	}
	if st := ev.GetStart(); st != nil {
		// The upstream's count at the start (messages' message_start, content generation's
		// first chunk) may exceed the estimate: images, files, provider-side prompts.
		r.input = max(r.input, st.GetInputTokens())
		return r.add(0)
	}
	n := ev.GetNative()
	if n == nil {
		return r.add(outputBound(ev))
	}
	if !r.native {
		r.native = true
		r.input = max(r.input, nativeInput(n.GetData()))
	}
	// outputBound's nativeContent, its walk started where the envelope the stream's
	// chunks share ends (content.go).
	if !nativeCounted(n.GetEvent()) {
		return r.add(0)
	}
	return r.add(r.env.contentBytes(n.GetData()))
}

// add counts output tokens as delivered and makes the hold cover them (pass, for answers
// that are not GenerateEvents: realtime responses).
func (r *running) add(output int64) *apierror.Error {
	if r == nil {
		return nil
	}
	r.output += output
	if r.input <= r.coverIn && r.output <= r.coverOut {
		return nil
	}
	return r.grow()
}

// grow makes the hold cover the usage counted so far and, unless money is tight, as much
// again: first twice the output (at least growStep beyond it), then, when the profile cannot
// pay that, exactly what has been delivered with this event.
func (r *running) grow() *apierror.Error {
	_ = r.flush.BeforeWait()
	in := max(r.input, r.coverIn)
	if !r.tight {
		ahead := max(2*r.coverOut, r.output+growStep)
		err := r.b.growHold(r.b.money.Price().WorstCase(in, ahead))
		if err == nil {
			r.coverIn, r.coverOut = in, ahead
			return nil
		}
		if err.Code != apierror.InsufficientBalance && err.Code != apierror.BudgetExceeded {
			return err
		}
		r.tight = true
	}
	next := max(r.output, r.coverOut) + growStep
	if err := r.b.growHold(r.b.money.Price().WorstCase(in, next)); err == nil {
		r.coverIn, r.coverOut = in, next
		return nil
	}
	out := max(r.output, r.coverOut)
	if err := r.b.growHold(r.b.money.Price().WorstCase(in, out)); err != nil {
		return err
	}
	r.coverIn, r.coverOut = in, out
	return nil
}

// nativeInput is the input count a passthrough answer's first event reports, 0 when none:
// messages' message_start (input, cache reads and writes), content generation's first chunk.
func nativeInput(data []byte) int64 {
	// The paths start at the top-level keys "message" and "usageMetadata". Where the chunk
	// has no escape, a key is its literal bytes between quotes, so a chunk with neither
	// (every chat, completions and responses chunk) has none of the counts: one look instead
	// of gjson's four walks of the chunk, on the first event of every passthrough stream.
	if bytes.IndexByte(data, '\\') < 0 && !bytes.Contains(data, keyMessage) && !bytes.Contains(data, keyUsageMetadata) {
		return 0
	}
	return nativeInputGJSON(data)
}

// The keys without their opening quote: every "message" key holds message", so the look
// finds no fewer, and a search for a needle that opens with a quote stops, in JSON, at every
// quote before it cuts over (some 200 ns a look on a chat chunk).
var (
	keyMessage       = []byte(`message"`)
	keyUsageMetadata = []byte(`usageMetadata"`)
)

// nativeInputGJSON is nativeInput read by gjson, whatever the chunk.
func nativeInputGJSON(data []byte) int64 {
	r := gjson.GetManyBytes(data, "message.usage.input_tokens", "message.usage.cache_read_input_tokens",
		"message.usage.cache_creation_input_tokens", "usageMetadata.promptTokenCount")
	return max(r[0].Int()+r[1].Int()+r[2].Int(), r[3].Int())
}

// outputBound is an upper bound of the output tokens an event delivers: its content's bytes.
func outputBound(ev *corev1.GenerateEvent) int64 {
	switch e := ev.GetEvent().(type) {
	case *corev1.GenerateEvent_Text:
		return int64(len(e.Text.GetText()))
	case *corev1.GenerateEvent_Reasoning:
		// The signature and redacted data stand for reasoning the upstream charges as output.
		r := e.Reasoning
		return int64(len(r.GetText()) + len(r.GetSignature()) + len(r.GetRedactedData()))
	case *corev1.GenerateEvent_ToolCall:
		tc := e.ToolCall
		return int64(len(tc.GetName()) + len(tc.GetSignature()))
	case *corev1.GenerateEvent_ToolArguments:
		return int64(len(e.ToolArguments.GetArguments()))
	case *corev1.GenerateEvent_Native:
		return nativeContent(e.Native.GetEvent(), e.Native.GetData())
	}
	return 0
}

// nativeContent bounds the output tokens of an upstream chunk passed through in the client's
// protocol: the bytes of its content members (contentKey) as they appear in the JSON, escapes
// included, which are at least the bytes of the content they decode to. The envelope around
// them (ids, model, object and type names, indexes, usage numbers) is not output. Named events
// that only repeat what deltas delivered, or carry no content, count nothing: responses'
// *.added and *.done events and response.completed (its usage is the answer's own report),
// messages' message_start, content_block_stop, message_delta (usage) and message_stop.
func nativeContent(name string, data []byte) int64 {
	if !nativeCounted(name) {
		return 0
	}
	return contentBytes(data)
}

// nativeCounted tells whether a passthrough event, by its SSE name (empty: unnamed, as chat
// chunks are), is counted as output.
func nativeCounted(name string) bool { return name == "" || countedEvent(name) }

// countedEvent tells whether a named passthrough event can deliver new content.
func countedEvent(name string) bool {
	switch name {
	case "message_start", "content_block_stop", "message_delta", "message_stop", "ping", "error":
		return false
	}
	for _, s := range [...]string{".added", ".done", ".created", ".in_progress", ".completed", ".incomplete", ".failed", ".queued"} {
		if strings.HasSuffix(name, s) {
			return false
		}
	}
	return true
}

// contentKey tells the members whose values are output in the passthrough protocols: chat's
// delta content, refusal, reasoning and tool call names and arguments; messages' text,
// thinking, signature, redacted data and partial JSON; responses' delta strings; content
// generation's text, thought signatures, inline data, and functionCall args (an object, counted
// whole); messages' tool_use input at its block start (an object).
func contentKey(name []byte) bool {
	// On length first, then in place (string(name) == "..." makes no copy; a switch on a
	// string variable did): most of a chunk's keys (id, object, created, model, choices,
	// index, finish_reason) then cost one comparison, or none.
	switch len(name) {
	case 4:
		return string(name) == "text" || string(name) == "name" || string(name) == "data" || string(name) == "args"
	case 5:
		return string(name) == "delta" || string(name) == "input"
	case 7:
		return string(name) == "content" || string(name) == "refusal"
	case 8:
		return string(name) == "thinking"
	case 9:
		return string(name) == "arguments" || string(name) == "reasoning" || string(name) == "signature"
	case 10:
		return string(name) == "transcript"
	case 12:
		return string(name) == "partial_json"
	case 16:
		return string(name) == "thoughtSignature"
	case 17:
		return string(name) == "reasoning_content" || string(name) == "partial_image_b64"
	}
	return false
}

// contentBytes is the number of bytes, in data's JSON, of the string values of contentKey
// members, and of the whole object values of those that hold tool arguments (wholeValue);
// other object values (chat and messages' delta, content generation's content) are read into
// for the content members they hold. One pass, no allocation; JSON that does not close counts
// every byte from where it opens.
func contentBytes(data []byte) int64 {
	n, _, _ := contentWalk(data, 0, 0, false)
	return n
}

// contentWalk is contentBytes' walk of data from the position i, with n counted before it.
// With record, at is the last opening quote before envelopeMax the walk stood at (-1: none)
// and atCount its count then: to get there the walk looked at data[:at+1] alone (a step
// looks past the string it reads only to the first byte that is not a space, and the next
// position it stands at is no further than that byte), so any data that opens with those
// bytes takes the walk there with that count (envelope).
func contentWalk(data []byte, i int, n int64, record bool) (count int64, at int, atCount int64) {
	at = -1
	for ; i < len(data); i++ {
		if data[i] != '"' {
			continue
		}
		if record && i < envelopeMax {
			at, atCount = i, n
		}
		end := stringEnd(data, i)
		if end < 0 {
			return n + int64(len(data)-i), at, atCount
		}
		colon := end
		if colon < len(data) && data[colon] != ':' { // JSON from upstreams has no space here
			colon = skipSpace(data, colon)
		}
		if colon >= len(data) || data[colon] != ':' {
			i = end - 1 // a value no content member owns
			continue
		}
		name := data[i+1 : end-1]
		i = colon
		if !contentKey(name) {
			continue
		}
		v := skipSpace(data, colon+1)
		switch {
		case v >= len(data):
		case data[v] == '"':
			e := stringEnd(data, v)
			if e < 0 {
				return n + int64(len(data)-v), at, atCount
			}
			n += int64(e - v - 2)
			i = e - 1
		case (data[v] == '{' || data[v] == '[') && wholeValue(name):
			e := valueEnd(data, v)
			if e < 0 {
				return n + int64(len(data)-v), at, atCount
			}
			n += int64(e - v)
			i = e - 1
		}
	}
	return n, at, atCount
}

// wholeValue: the object values of these members are output as a whole (tool arguments
// as JSON objects); the others (delta, content) hold content members of their own.
func wholeValue(name []byte) bool {
	switch string(name) {
	case "args", "input", "arguments":
		return true
	}
	return false
}

// stringEnd is the index after the closing quote of the string opening at data[i], -1 when
// it does not close. It runs on every string of every passthrough chunk (most of its bytes):
// it looks at eight bytes at a time for the next quote or backslash (stringStop), and a
// backslash takes the byte after it, as a byte-by-byte reading does (FuzzContentBytes).
func stringEnd(data []byte, i int) int {
	for j := i + 1; ; j += 2 {
		j = stringStop(data, j)
		if j >= len(data) {
			return -1
		}
		if data[j] == '"' {
			return j + 1
		}
	}
}

// stringStop is the index of the first quote or backslash in data from j on, len(data) when
// there is none (or j is past the end). Eight bytes at a time: a byte equal to c is a zero
// byte of x^(c*lo8), and the lowest flag of the zero-byte test ((v-lo8) &^ v & hi8) is
// exactly the first zero byte (flags above it may be borrows; the lowest is never one).
func stringStop(data []byte, j int) int {
	for ; j+8 <= len(data); j += 8 {
		x := binary.LittleEndian.Uint64(data[j:])
		q, b := x^(lo8*'"'), x^(lo8*'\\')
		if m := ((q-lo8)&^q | (b-lo8)&^b) & hi8; m != 0 {
			return j + bits.TrailingZeros64(m)/8
		}
	}
	for ; j < len(data); j++ {
		if c := data[j]; c == '"' || c == '\\' {
			return j
		}
	}
	return len(data)
}

const (
	lo8 = 0x0101010101010101
	hi8 = 0x8080808080808080
)

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// valueEnd is the index after the object or array opening at data[i], -1 when it does not
// close.
func valueEnd(data []byte, i int) int {
	depth := 0
	for j := i; j < len(data); j++ {
		switch data[j] {
		case '"':
			e := stringEnd(data, j)
			if e < 0 {
				return -1
			}
			j = e - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return -1
}
