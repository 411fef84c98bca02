// Package provider is what every upstream adapter shares: the small Adapter interface, the call
// description core hands an adapter, the HTTP client with first-byte and idle timeouts (never a
// total one: pauses between chunks are normal, spec 6.2), and the classification of upstream
// failures into retryable or final. Adapters live in the sub-packages, one per provider kind.
package provider

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
)

// Default timeouts when the catalogue names none.
const (
	DefaultFirstByteTimeout = 60 * time.Second
	DefaultIdleTimeout      = 120 * time.Second
)

// Call is one attempt at one upstream.
type Call struct {
	Upstream
	Request *corev1.GenerateRequest
	// DefaultMaxTokens is the output limit to send to an upstream protocol that requires one
	// when the client gave none (the model's explicit limit, or a documented default).
	DefaultMaxTokens int64
}

// Timeouts of one provider.
type Timeouts struct {
	// FirstByte bounds the wait for the response headers and the first chunk.
	FirstByte time.Duration
	// Idle bounds the pause between two reads of the body.
	Idle time.Duration
}

// Adapter speaks one upstream kind.
type Adapter interface {
	// Generate sends the request upstream. It returns once the upstream has answered with a
	// success status; a failure before that is an *Error. The stream's first event is Start.
	Generate(ctx context.Context, call *Call) (Stream, error)
	// CountTokens counts the request's input tokens upstream; ErrCannotCount when the upstream
	// protocol has no counting route, so that core counts locally.
	CountTokens(ctx context.Context, call *Call) (int64, error)
}

// Stream is an upstream answer decoded into canonical events.
type Stream interface {
	// Next returns the next event, io.EOF after the protocol's terminal event. A stream that
	// ends before its terminal event returns an *Error (its usage is unreliable). A Native
	// event may be lent: valid, with its data, only until the next call (a streamed chat
	// passthrough's chunks are, provider.Lent); a consumer that keeps one copies it.
	Next() (*corev1.GenerateEvent, error)
	// Usage is the normalised usage of the whole answer, valid after Next returned io.EOF;
	// unreliable before that.
	Usage() metering.Usage
	// Close releases the upstream connection; safe to call more than once.
	Close() error
}

// ErrCannotCount says the upstream protocol has no token-counting route.
var ErrCannotCount = errors.New("provider: the upstream cannot count tokens")

// Error is an upstream failure.
type Error struct {
	// Status is the upstream's HTTP status; 0 for transport failures and timeouts.
	Status int
	// Message is safe to show the client: the upstream's own message where it helps (400, 429),
	// never anything that could carry a credential.
	Message string
	// Timeout is true for a first-byte or idle timeout.
	Timeout bool
	// Retryable is true when another upstream may succeed: connection failure, 5xx, 429, or a
	// first-byte timeout.
	Retryable bool
	// RetryAfter is the upstream's retry-after (429, 503); 0 when it gave none.
	RetryAfter time.Duration
	Err        error
}

// Error is redacted (Redact): it is what logs print, and a transport error quotes the
// upstream address, where some providers take their key.
func (e *Error) Error() string {
	if e.Err != nil {
		return Redact(e.Message + ": " + e.Err.Error())
	}
	return Redact(e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// UsageEvent wraps a normalised usage record as an event: one allocation for the event, its
// oneof wrapper and the usage, as TextEvent.
func UsageEvent(u metering.Usage) *corev1.GenerateEvent { return new(usageEvent).of(u) }

// usageEvent is a usage event, its oneof wrapper and the usage in one piece of memory: a
// stream holds one in its own allocation (SSEStream).
type usageEvent struct {
	ev    corev1.GenerateEvent
	wrap  corev1.GenerateEvent_Usage
	usage corev1.Usage
}

func (x *usageEvent) of(u metering.Usage) *corev1.GenerateEvent {
	x.usage.InputTokens, x.usage.CachedInputTokens, x.usage.CacheWriteTokens = u.Input, u.CachedInput, u.CacheWrite
	x.usage.OutputTokens, x.usage.ReasoningTokens, x.usage.Reliable = u.Output, u.Reasoning, u.Reliable
	x.wrap.Usage = &x.usage
	x.ev.Event = &x.wrap
	return &x.ev
}

// StartEvent is the first event of a stream (the event and its oneof wrapper in one
// allocation).
func StartEvent(s *corev1.Start) *corev1.GenerateEvent { return new(startEvent).of(s) }

// startEvent is a Start event and its oneof wrapper in one piece of memory, as usageEvent.
type startEvent struct {
	ev   corev1.GenerateEvent
	wrap corev1.GenerateEvent_Start
}

func (x *startEvent) of(s *corev1.Start) *corev1.GenerateEvent {
	x.wrap.Start = s
	x.ev.Event = &x.wrap
	return &x.ev
}

// NativeEvent is a passthrough chunk: every chunk of a passed-through stream, so the event,
// its oneof wrapper and the chunk are one allocation, as TextEvent.
func NativeEvent(name string, data []byte) *corev1.GenerateEvent {
	return new(nativeEvent).of(name, data)
}

// nativeEvent is a Native event, its oneof wrapper and the chunk in one piece of memory.
type nativeEvent struct {
	ev     corev1.GenerateEvent
	wrap   corev1.GenerateEvent_Native
	native corev1.Native
}

func (x *nativeEvent) of(name string, data []byte) *corev1.GenerateEvent {
	x.native.Event, x.native.Data = name, data
	x.wrap.Native = &x.native
	x.ev.Event = &x.wrap
	return &x.ev
}

// NativeAnswer is a non-streamed passthrough answer's Start, its one Native event and its
// stream in one allocation: the adapter fills Start in, makes the event with Event and the
// stream with Stream.
type NativeAnswer struct {
	Start  corev1.Start
	native nativeEvent
	stream staticRoom
}

// Event is the answer's Native event (NativeEvent), in the answer's allocation; once.
func (a *NativeAnswer) Event(name string, data []byte) *corev1.GenerateEvent {
	return a.native.of(name, data)
}

// Stream is NewStaticStream of the answer's Start, its Native event (made by Event before)
// and u, in the answer's allocation; once.
func (a *NativeAnswer) Stream(u metering.Usage) *StaticStream {
	return a.stream.init(&a.Start, []*corev1.GenerateEvent{&a.native.ev}, u)
}

// TextEvent is a text fragment. Text events are most of a stream: the event, its oneof
// wrapper and the delta are one allocation instead of three.
func TextEvent(s string) *corev1.GenerateEvent {
	x := &struct {
		ev   corev1.GenerateEvent
		wrap corev1.GenerateEvent_Text
		text corev1.TextDelta
	}{}
	x.text.Text = s
	x.wrap.Text = &x.text
	x.ev.Event = &x.wrap
	return &x.ev
}

// ReasoningEvent is a reasoning fragment or signature.
func ReasoningEvent(text, signature string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Reasoning{Reasoning: &corev1.ReasoningDelta{Text: text, Signature: signature}}}
}

// ToolCallEvent opens tool call number index.
func ToolCallEvent(index int, id, name, signature string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_ToolCall{ToolCall: &corev1.ToolCallStart{Index: int32(index), Id: id, Name: name, Signature: signature}}}
}

// ToolArgsEvent is a fragment of tool call number index's arguments.
func ToolArgsEvent(index int, fragment string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_ToolArguments{ToolArguments: &corev1.ToolCallDelta{Index: int32(index), Arguments: fragment}}}
}

// FinishEvent carries the finish reason: one per answer, and, as TextEvent, one allocation
// for the event, its oneof wrapper and the finish.
func FinishEvent(r corev1.FinishReason, stopSequence string) *corev1.GenerateEvent {
	x := &struct {
		ev     corev1.GenerateEvent
		wrap   corev1.GenerateEvent_Finish
		finish corev1.Finish
	}{}
	x.finish.Reason, x.finish.StopSequence = r, stopSequence
	x.wrap.Finish = &x.finish
	x.ev.Event = &x.wrap
	return &x.ev
}

// Drain reads a stream to its end and collects its events; for tests and non-streaming
// accumulation. Native events are copies: a stream may lend them only until its next (Next).
func Drain(s Stream) ([]*corev1.GenerateEvent, error) {
	var out []*corev1.GenerateEvent
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if n := ev.GetNative(); n != nil {
			ev = NativeEvent(n.GetEvent(), bytes.Clone(n.GetData()))
		}
		out = append(out, ev)
	}
}

// Header names the adapters set; the client's own headers never reach an upstream except
// those an adapter copies from GenerateRequest.forward_headers on purpose.
const (
	HeaderContentType = "Content-Type"
	HeaderAccept      = "Accept"
	HeaderUserAgent   = "User-Agent"
)

// UserAgent is what the gateway sends upstream instead of the client's User-Agent.
const UserAgent = "modelgateway/1"

// NewRequest builds an upstream POST with the gateway's own headers only. Its context is
// already the upstream call's (call, in the answer's body, timedBody), which Do arms, and the
// request's body lives in the same allocation: Do would otherwise copy the whole request to
// give it that context (Request.WithContext, ~250 bytes), and the body was one more object.
// Send it with Do or DoUpload: the call follows ctx's cancellation once Do has armed it, not
// before.
func NewRequest(ctx context.Context, url string, body []byte) (*http.Request, error) {
	tb := &timedBody{}
	tb.call.parent, tb.call.body = ctx, tb
	if len(body) == 0 {
		return newRequest(&tb.call, &tb.req, url, nil)
	}
	// The body is its own Closer, and GetBody (a retry on a connection the upstream had
	// closed while idle) reopens the same bytes: net/http would wrap the reader in a
	// NopCloser and copy it into GetBody's closure, an allocation more per request.
	tb.reqBody.Reset(body)
	req, err := newRequest(&tb.call, &tb.req, url, &tb.reqBody)
	if err != nil {
		return nil, err
	}
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return newRequestBody(body), nil }
	return req, nil
}

// requestBody is an upstream request's encoded body.
type requestBody struct{ bytes.Reader }

func newRequestBody(b []byte) *requestBody {
	r := new(requestBody)
	r.Reset(b)
	return r
}

// Close implements io.Closer: there is nothing to release.
func (*requestBody) Close() error { return nil }

// newRequest is http.NewRequestWithContext(ctx, POST, url, body) with the gateway's own
// headers (a nil body is an empty one), from a request made once per URL (requestTemplate):
// a copy of it under ctx is one allocation, where NewRequestWithContext parsed the URL again
// (its URL, an allocation) for every request to the same few upstream endpoints. The copy is
// req, in an allocation of the caller's (the call's answer body): WithContext's own copy,
// inlined and not kept, stays on the stack.
func newRequest(ctx context.Context, req *http.Request, url string, body io.ReadCloser) (*http.Request, error) {
	tmpl, err := requestTemplate(url)
	if err != nil {
		return nil, err
	}
	*req = *tmpl.WithContext(ctx)
	// Room for the adapters' headers (credential, Accept, a version or two) in the map's
	// first allocation. What Header.Set would store, with values shared by every request
	// (headers.go).
	req.Header = make(http.Header, 8)
	req.Header[HeaderContentType] = valueJSON
	req.Header[HeaderUserAgent] = valueUserAgent
	if body == nil {
		// net/http's own handling: an empty body is http.NoBody.
		req.Body, req.GetBody = http.NoBody, noBody
	} else {
		req.Body = body
	}
	return req, nil
}

func noBody() (io.ReadCloser, error) { return http.NoBody, nil }

// requestTemplate is the request net/http makes for a POST to url (its URL parsed, its Host
// set), without context, header or body. Templates are shared: a request copied from one
// shares its URL, which nothing that sends a request writes (net/http's transport and h1
// read it; a redirect or a proxy makes a new one).
func requestTemplate(url string) (*http.Request, error) {
	templates.mu.RLock()
	tmpl := templates.m[url]
	templates.mu.RUnlock()
	if tmpl != nil {
		return tmpl, nil
	}
	tmpl, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, nil)
	if err != nil {
		return nil, err
	}
	tmpl.Header = nil
	templates.mu.Lock()
	defer templates.mu.Unlock()
	if templates.m == nil {
		templates.m = make(map[string]*http.Request)
	}
	// The catalogue names few endpoints; past maxTemplates (URLs made per model, say, in a
	// catalogue of many) further ones are parsed per request instead of kept.
	if len(templates.m) < maxTemplates {
		templates.m[url] = tmpl
	}
	return tmpl, nil
}

// templates holds the request templates by URL (requestTemplate).
var templates struct {
	mu sync.RWMutex
	m  map[string]*http.Request
}

const maxTemplates = 1024
