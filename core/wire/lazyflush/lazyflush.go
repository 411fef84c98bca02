// Package lazyflush coalesces the flushes of a streamed answer. A stream's encoder flushes
// after every event, because an event left in a buffer is a stalled stream for the client;
// but events that the upstream delivered together (a fast model, or a slow client's backlog)
// may go out together: one write and one system call instead of one per event. The rule that
// keeps latency unchanged: whatever has been written reaches the client before the gateway
// waits — for the upstream (the provider's body reader calls BeforeWait before each read) or
// for anything else (the durable charge before an answer's end).
//
// The front wraps a streamed answer's ResponseWriter in a Writer and puts it in the request
// context; core finds it there (From). Flushes stay eager until some reader has promised to
// call BeforeWait before it blocks (Coalesce): a stream fed by anything else is flushed per
// event as before. Once coalescing, the Writer also holds what is written until the flush
// (up to maxHeld bytes): an arrival's events then pass through net/http's buffers and chunk
// framing as one write instead of one each. The handler calls End when the answer is done.
// A Writer is used by the handler's goroutine only (core's in-process Generate runs in it),
// so it has no lock.
package lazyflush

import (
	"context"
	"errors"
	"net/http"
	"sync"
)

// Writer is an http.ResponseWriter whose Flush is deferred to the next BeforeWait once
// Coalesce has been called. http.ResponseController finds its FlushError; everything else
// (deadlines, hijacking) reaches the wrapped writer through Unwrap.
type Writer struct {
	http.ResponseWriter
	rc      http.ResponseController // of the wrapped writer; by value: one allocation less per stream
	lazy    bool                    // a reader flushes before it waits: Flush may wait for it
	pending bool                    // written and not yet flushed
	err     error                   // the last real flush's error: the client has gone
	held    *[]byte                 // written while lazy, not yet passed on (from heldBuffers)
}

// maxHeld bounds what a Writer holds: past it, what it holds is passed on (net/http sends
// it when its own buffers fill, as it would have without the Writer).
const maxHeld = 32 << 10

// heldBuffers recycles the held bytes' buffers: a Writer takes one when it holds a write and
// gives it back at the next real flush. They start at 1 KiB: what a stream holds is one
// arrival's events, or its last events while it waits for the durable charge (a few hundred
// bytes; a third of 64 streams were in that wait, each holding 4 KiB); a larger arrival grows
// its buffer, which goes back to the pool grown.
var heldBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1<<10); return &b }}

// Write passes p on at once until a reader has promised to flush before waiting, then holds
// it until the next real flush (or maxHeld).
func (w *Writer) Write(p []byte) (int, error) {
	if !w.lazy {
		return w.ResponseWriter.Write(p)
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.held == nil {
		w.held = heldBuffers.Get().(*[]byte)
	}
	*w.held = append(*w.held, p...)
	if len(*w.held) >= maxHeld {
		if err := w.pass(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// pass writes what is held to the wrapped writer.
func (w *Writer) pass() error {
	if w.held == nil || len(*w.held) == 0 {
		return nil
	}
	_, err := w.ResponseWriter.Write(*w.held)
	*w.held = (*w.held)[:0]
	if err != nil && w.err == nil {
		w.err = err
	}
	return err
}

// End passes on what is held (the end of the response sends it) and gives the buffer back:
// call it when the answer is done, before the handler returns. Nil-safe.
func (w *Writer) End() {
	if w == nil || w.held == nil {
		return
	}
	_ = w.pass()
	w.release()
}

// release gives the (emptied) held buffer back. A stream releases it at every real flush
// too: it then waits for the upstream, for most of its life, and 64 waiting streams held
// 64 buffers where the few that are being written need one each.
func (w *Writer) release() {
	if w.held == nil {
		return
	}
	if cap(*w.held) <= 2*maxHeld {
		heldBuffers.Put(w.held)
	}
	w.held = nil
}

// NewWriter wraps w.
func NewWriter(w http.ResponseWriter) *Writer {
	lw := new(Writer)
	lw.Init(w)
	return lw
}

// Init makes w what NewWriter(rw) returns, in memory the caller holds (a stream's state
// holds its writer: one allocation less per stream). w must be new (zero) or ended.
func (w *Writer) Init(rw http.ResponseWriter) {
	*w = Writer{ResponseWriter: rw, rc: *http.NewResponseController(rw)}
}

// Unwrap lets http.ResponseController reach the wrapped writer.
func (w *Writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush implements http.Flusher (for writers that flush through the interface).
func (w *Writer) Flush() { _ = w.FlushError() }

// FlushError is what http.ResponseController.Flush calls: a real flush while no reader has
// promised to flush before waiting, else only a note that output is pending. It reports the
// error of an earlier real flush, so that an encoder still learns that the client has gone.
func (w *Writer) FlushError() error {
	if !w.lazy {
		return w.flush()
	}
	w.pending = true
	return w.err
}

// Coalesce is called by a reader that calls BeforeWait before every read that may block:
// from then on, flushes wait for it. Nil-safe, like every method below.
func (w *Writer) Coalesce() {
	if w != nil {
		w.lazy = true
	}
}

// BeforeWait flushes what is pending: call it before the gateway waits for anything. It
// returns the flush's error (the client has gone).
func (w *Writer) BeforeWait() error {
	if w == nil {
		return nil
	}
	if !w.pending {
		return w.err
	}
	return w.flush()
}

// Err is the error of the last real flush: non-nil once the client has gone.
func (w *Writer) Err() error {
	if w == nil {
		return nil
	}
	return w.err
}

func (w *Writer) flush() error {
	w.pending = false
	if w.err != nil {
		return w.err
	}
	if err := w.pass(); err != nil {
		return err
	}
	w.release()
	if err := w.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		w.err = err
	}
	return w.err
}

type key struct{}

// NewContext returns ctx carrying w for the code that serves the request.
func NewContext(ctx context.Context, w *Writer) context.Context {
	return context.WithValue(ctx, key{}, w)
}

// Context is ctx carrying w, as NewContext returns it, by value: a caller that holds one
// in memory of its own (a stream's state) saves the context's allocation. Set both fields
// before use and keep the Context where it is (use its address).
type Context struct {
	context.Context
	W *Writer
}

// Value answers From's lookup and passes every other to the parent.
func (c *Context) Value(k any) any {
	if _, ok := k.(key); ok {
		return c.W
	}
	return c.Context.Value(k)
}

// From returns the Writer of the request ctx belongs to, nil when its answer is not a
// coalesced stream (nil is a valid receiver: all methods then do nothing).
func From(ctx context.Context) *Writer {
	w, _ := ctx.Value(key{}).(*Writer)
	return w
}
