package lazyflush

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// countingWriter counts the flushes that reach the real writer; err makes them fail.
type countingWriter struct {
	*httptest.ResponseRecorder
	flushes int
	err     error
}

func (c *countingWriter) FlushError() error {
	c.flushes++
	return c.err
}

func TestFlushesWaitForTheReaderOnceItHasPromisedToFlush(t *testing.T) {
	t.Parallel()
	real := &countingWriter{ResponseRecorder: httptest.NewRecorder()}
	w := NewWriter(real)
	rc := http.NewResponseController(w)

	// Before a reader promised to flush before waiting, every flush is real.
	if err := rc.Flush(); err != nil || real.flushes != 1 {
		t.Fatalf("eager flush: err %v, %d flushes", err, real.flushes)
	}
	w.Coalesce()
	writeAndFlush(t, w, rc, 3)
	if real.flushes != 1 {
		t.Fatalf("%d flushes before the wait, want them pending", real.flushes)
	}
	if err := w.BeforeWait(); err != nil || real.flushes != 2 {
		t.Fatalf("before the wait: err %v, %d flushes, want 2", err, real.flushes)
	}
	// Nothing pending: no flush.
	if err := w.BeforeWait(); err != nil || real.flushes != 2 {
		t.Fatalf("second wait: err %v, %d flushes, want still 2", err, real.flushes)
	}
	if got := real.Body.String(); got != "data: x\n\ndata: x\n\ndata: x\n\n" {
		t.Fatalf("body %q", got)
	}
}

func TestAFailedFlushIsReportedToTheEncoder(t *testing.T) {
	t.Parallel()
	gone := errors.New("broken pipe")
	real := &countingWriter{ResponseRecorder: httptest.NewRecorder(), err: gone}
	w := NewWriter(real)
	w.Coalesce()
	rc := http.NewResponseController(w)
	if err := rc.Flush(); err != nil {
		t.Fatalf("a pending flush failed before any real one: %v", err)
	}
	if err := w.BeforeWait(); !errors.Is(err, gone) || !errors.Is(w.Err(), gone) {
		t.Fatalf("BeforeWait %v, Err %v; want %v", err, w.Err(), gone)
	}
	// The encoder's next flush learns it, and no more real flushes are tried.
	if err := rc.Flush(); !errors.Is(err, gone) {
		t.Fatalf("next flush: %v, want %v", err, gone)
	}
	if err := w.BeforeWait(); !errors.Is(err, gone) || real.flushes != 1 {
		t.Fatalf("after the failure: err %v, %d real flushes, want 1", err, real.flushes)
	}
}

func TestWithoutAWriterEverythingIsANoOp(t *testing.T) {
	t.Parallel()
	w := From(context.Background())
	if w != nil {
		t.Fatal("a Writer in an empty context")
	}
	w.Coalesce()
	if err := w.BeforeWait(); err != nil || w.Err() != nil {
		t.Fatal(err)
	}
	real := NewWriter(httptest.NewRecorder())
	if got := From(NewContext(context.Background(), real)); got != real {
		t.Fatal("From does not find the Writer")
	}
}

// Once coalescing, what is written reaches the wrapped writer in one write at the flush
// before the wait, or at End, or when maxHeld is reached; before, every write passes at once.
func TestWritesAreHeldUntilTheFlushOrTheEnd(t *testing.T) {
	t.Parallel()
	real := &writeCounter{ResponseRecorder: httptest.NewRecorder()}
	w := NewWriter(real)
	rc := http.NewResponseController(w)
	if _, err := w.Write([]byte("data: eager\n\n")); err != nil || real.writes != 1 {
		t.Fatalf("before Coalesce: err %v, %d writes", err, real.writes)
	}
	w.Coalesce()
	writeAndFlush(t, w, rc, 3)
	if real.writes != 1 || real.Body.String() != "data: eager\n\n" {
		t.Fatalf("%d writes before the wait, body %q; want the events held", real.writes, real.Body)
	}
	if w.held == nil {
		t.Fatal("three events written and held, yet the Writer has no buffer")
	}
	if err := w.BeforeWait(); err != nil || real.writes != 2 || real.Body.String() != "data: eager\n\n"+strings.Repeat("data: x\n\n", 3) {
		t.Fatalf("before the wait: err %v, %d writes, body %q", err, real.writes, real.Body)
	}
	// A stream waiting for its upstream holds no buffer.
	if w.held != nil {
		t.Fatalf("after the flush before the wait the Writer still holds a buffer (cap %d)", cap(*w.held))
	}
	// Written, not flushed: End passes it on, once.
	if _, err := w.Write([]byte("data: [DONE]\n\n")); err != nil {
		t.Fatal(err)
	}
	w.End()
	w.End()
	if real.writes != 3 || !strings.HasSuffix(real.Body.String(), "data: x\n\ndata: [DONE]\n\n") {
		t.Fatalf("after End: %d writes, body %q", real.writes, real.Body)
	}
	// A burst larger than maxHeld is passed on without waiting for the flush.
	big := NewWriter(&writeCounter{ResponseRecorder: httptest.NewRecorder()})
	big.Coalesce()
	chunk := []byte(strings.Repeat("y", 1000) + "\n\n")
	for range maxHeld/len(chunk) + 1 {
		if _, err := big.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if got := big.ResponseWriter.(*writeCounter); got.writes != 1 || got.Body.Len() < maxHeld {
		t.Fatalf("past maxHeld: %d writes, %d bytes passed on", got.writes, got.Body.Len())
	}
	big.End()
}

type writeCounter struct {
	*httptest.ResponseRecorder
	writes int
}

func (c *writeCounter) Write(p []byte) (int, error) {
	c.writes++
	return c.ResponseRecorder.Write(p)
}

// writeAndFlush writes n events ("data: x"), each followed by a flush through rc.
func writeAndFlush(t *testing.T, w *Writer, rc *http.ResponseController, n int) {
	t.Helper()
	for range n {
		if _, err := w.Write([]byte("data: x\n\n")); err != nil {
			t.Fatal(err)
		}
		if err := rc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}

// A Context held by value answers as NewContext's does: From finds its writer, the parent's
// values and cancellation pass through, and a plain context has no writer.
func TestContextByValueCarriesTheWriter(t *testing.T) {
	t.Parallel()
	type other struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), other{}, "v"))
	var w Writer
	w.Init(httptest.NewRecorder())
	c := &Context{Context: parent, W: &w}
	if From(c) != &w || From(NewContext(parent, &w)) != &w {
		t.Fatalf("From found %p, want %p", From(c), &w)
	}
	if From(parent) != nil {
		t.Fatal("the parent has a writer")
	}
	if c.Value(other{}) != "v" {
		t.Fatalf("the parent's value is %v", c.Value(other{}))
	}
	// A child of the Context is cancelled with the parent, as a child of NewContext's.
	child, stop := context.WithCancel(c)
	defer stop()
	cancel()
	<-child.Done()
	if !errors.Is(child.Err(), context.Canceled) {
		t.Fatalf("child: %v", child.Err())
	}
}
