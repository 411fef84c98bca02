package provider

import (
	"errors"
	"io"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
	"modelgateway/core/wire/sse"
)

// Decoder turns one upstream protocol's SSE events into canonical events. Each adapter has
// one per stream (state lives in it); SSEStream drives it.
type Decoder interface {
	// Decode handles one upstream event. done reports that the protocol's terminal event has
	// arrived; events after it are not read.
	Decode(ev sse.Event) (out []*corev1.GenerateEvent, done bool, err error)
	// End is called when the body ended before a terminal event. Protocols whose stream simply
	// ends (content generation) finish here; the others return an *Error: a cut stream.
	End() ([]*corev1.GenerateEvent, error)
	// Usage is the normalised usage; called once the stream is done.
	Usage() metering.Usage
}

// Single is a reusable one-event Decode result: most upstream events become exactly one
// canonical event, and SSEStream copies a result before the next Decode.
type Single [1]*corev1.GenerateEvent

// Of returns ev as the only event, in s.
func (s *Single) Of(ev *corev1.GenerateEvent) []*corev1.GenerateEvent {
	s[0] = ev
	return s[:]
}

// SSEStream is a Stream over an upstream SSE body. Its reader and its first and last events
// (Start, usage) live in its own allocation.
type SSEStream struct {
	body    io.ReadCloser
	r       sse.Reader
	dec     Decoder
	pending []*corev1.GenerateEvent // pending[next:] are still to be returned
	// room is pending's first backing array, in the stream's allocation: a decoder returns a
	// few events per upstream event, and a larger batch grows pending away from it.
	room  [4]*corev1.GenerateEvent
	next  int
	done  bool
	usage metering.Usage
	// The Start and usage events handed out; their consumer may keep them (and so the
	// stream's memory) as long as it likes: nothing here is written again once handed out.
	startEv startEvent
	usageEv usageEvent
}

// NewSSEStream starts with the given Start event.
func NewSSEStream(body io.ReadCloser, start *corev1.Start, dec Decoder) *SSEStream {
	s := new(SSEStream)
	s.Init(body, start, dec)
	return s
}

// Init makes s what NewSSEStream(body, start, dec) returns, in memory the caller holds: an
// adapter can have its decoder and its stream in one allocation. s must be new (zero).
func (s *SSEStream) Init(body io.ReadCloser, start *corev1.Start, dec Decoder) {
	s.body, s.dec, s.usage = body, dec, metering.Unreliable("the stream did not finish")
	s.r.Reset(body)
	s.room[0] = s.startEv.of(start)
	s.pending = s.room[:1]
}

// BorrowData lets the stream's reader hand dec each event's data where it lies in the read
// buffer, valid only until the next event is read (sse.Reader.Borrow): for a decoder that
// copies whatever it keeps, which then costs no copy per event and no arena block per
// stream. Call it after Init.
func (s *SSEStream) BorrowData() { s.r.Borrow() }

// Next implements Stream. The usage event is appended after the decoder's last event.
func (s *SSEStream) Next() (*corev1.GenerateEvent, error) {
	for s.next == len(s.pending) {
		if s.done {
			return nil, io.EOF
		}
		clear(s.pending)
		s.pending, s.next = s.pending[:0], 0
		ev, err := s.r.Next()
		var out []*corev1.GenerateEvent
		var done bool
		switch {
		case err == nil:
			out, done, err = s.dec.Decode(ev)
			if err == nil && !done && len(out) == 1 {
				// The usual event, one out of one in: returned as it is, not through
				// pending (a copy in, a clear out).
				return out[0], nil
			}
		case errors.Is(err, io.EOF):
			out, err = s.dec.End()
			done = err == nil
		case err != nil:
			var pe *Error
			if !errors.As(err, &pe) {
				err = &Error{Message: "reading the upstream stream failed", Err: err}
			}
		}
		if err != nil {
			return nil, err
		}
		s.pending = append(s.pending, out...)
		if done {
			s.done = true
			s.usage = s.dec.Usage()
			s.pending = append(s.pending, s.usageEv.of(s.usage))
		}
	}
	ev := s.pending[s.next]
	s.next++
	return ev, nil
}

// Usage implements Stream.
func (s *SSEStream) Usage() metering.Usage { return s.usage }

// Close implements Stream. A stream that reached its terminal event releases its body, so
// that the connection serves the next request.
func (s *SSEStream) Close() error {
	s.r.Release()
	if s.done {
		return Release(s.body)
	}
	return s.body.Close()
}

// StaticStream replays events decoded from a whole (non-streaming) answer.
type StaticStream struct {
	events []*corev1.GenerateEvent
	usage  metering.Usage
}

// NewStaticStream is Start, the events, then the usage event.
func NewStaticStream(start *corev1.Start, events []*corev1.GenerateEvent, u metering.Usage) *StaticStream {
	return new(staticRoom).init(start, events, u)
}

// staticRoom is a static stream with room for an answer of one event (a passthrough body,
// one translated message): its stream, the slice of its three events and the start and
// usage events themselves, in one allocation.
type staticRoom struct {
	s     StaticStream
	buf   [3]*corev1.GenerateEvent
	start startEvent
	usage usageEvent
}

func (x *staticRoom) init(start *corev1.Start, events []*corev1.GenerateEvent, u metering.Usage) *StaticStream {
	all := x.buf[:0]
	if len(events)+2 > len(x.buf) {
		all = make([]*corev1.GenerateEvent, 0, len(events)+2)
	}
	all = append(all, x.start.of(start))
	all = append(all, events...)
	all = append(all, x.usage.of(u))
	x.s = StaticStream{events: all, usage: u}
	return &x.s
}

// Next implements Stream.
func (s *StaticStream) Next() (*corev1.GenerateEvent, error) {
	if len(s.events) == 0 {
		return nil, io.EOF
	}
	ev := s.events[0]
	s.events = s.events[1:]
	return ev, nil
}

// Usage implements Stream.
func (s *StaticStream) Usage() metering.Usage { return s.usage }

// Close implements Stream.
func (s *StaticStream) Close() error { return nil }

// ReadAll reads a whole success body (bounded by max) and closes it.
// It reads into one buffer of the answer's declared length when the upstream declared one
// (io.ReadAll would start at 512 bytes and grow through several copies), else as io.ReadAll
// does; it stops after max+1 bytes.
func ReadAll(body io.ReadCloser, max int64) ([]byte, error) {
	defer body.Close()
	size := int64(512)
	if tb, ok := body.(*timedBody); ok && tb.size >= 0 && tb.size <= max {
		// Room for the read that sees the end and for a longer model name (answerRoom); no
		// more than maxPresize on the upstream's word alone (a length it declares but does
		// not send must not cost memory).
		size = min(tb.size+1+answerRoom, maxPresize)
	}
	b := make([]byte, 0, size)
	for int64(len(b)) <= max {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow, as io.ReadAll does
		}
		n, err := body.Read(b[len(b):min(int64(cap(b)), max+1)])
		b = b[:len(b)+n]
		if err == io.EOF { // the end, as io.ReadAll tells it (an EOF is never wrapped)
			if int64(len(b)) > max {
				break
			}
			return b, nil
		}
		if err != nil {
			var pe *Error
			if errors.As(err, &pe) {
				return nil, pe
			}
			return nil, &Error{Message: "reading the upstream answer failed", Err: err}
		}
	}
	return nil, &Error{Message: "the upstream answer is too large"}
}

// answerRoom is what ReadAll's buffer holds beyond a declared length: room for
// RenameAnswerModel to put a longer public model name in place.
const answerRoom = 48

// maxPresize bounds the buffer ReadAll makes from a declared length before any of it has
// arrived; a longer answer grows it as it comes.
const maxPresize = 1 << 20

// MaxAnswer bounds a non-streaming upstream answer held in memory.
const MaxAnswer = 64 << 20
