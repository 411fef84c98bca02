package provider

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"modelgateway/core/wire/lazyflush"
)

// bufferedBody is an upstream body that says how much of it has arrived (as core/provider/h1's
// answers do): avail bytes are readable without waiting.
type bufferedBody struct {
	r     io.Reader
	avail int
}

func (b *bufferedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p[:min(len(p), max(b.avail, 1))])
	b.avail = max(b.avail-n, 0)
	return n, err
}

func (b *bufferedBody) Buffered() int { return b.avail }
func (b *bufferedBody) Close() error  { return nil }

// flushCounter counts the flushes that reach the client.
type flushCounter struct {
	*httptest.ResponseRecorder
	flushes int
}

func (f *flushCounter) Flush() { f.flushes++ }

// The client's pending output is flushed before a read of the upstream that may wait, and
// only then: a read the body can answer from what has arrived (Buffered) waits for nothing,
// and a flush before it would be a system call and a packet of its own in the middle of an
// arrival.
func TestFlushOnlyBeforeAReadThatMayWait(t *testing.T) {
	for _, tc := range []struct {
		name    string
		avail   int
		flushes int
	}{
		{"arrived", 10, 0},
		{"may wait", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
			w := lazyflush.NewWriter(client)
			w.Coalesce()
			tb := &timedBody{rc: &bufferedBody{r: strings.NewReader("0123456789"), avail: tc.avail},
				flush: w, idle: time.Hour}
			tb.timer = startCallTimer(time.Hour, tb)
			defer tb.timer.stop(tb)
			tb.buffered = tb.rc.(interface{ Buffered() int })
			_, _ = io.WriteString(w, "data: pending\n\n")
			http.NewResponseController(w).Flush() // lazy: noted, not done
			if client.flushes != 0 {
				t.Fatalf("a lazy flush reached the client")
			}
			if _, err := tb.Read(make([]byte, 4)); err != nil {
				t.Fatal(err)
			}
			if client.flushes != tc.flushes {
				t.Fatalf("%d flushes before the read, want %d", client.flushes, tc.flushes)
			}
		})
	}
}
