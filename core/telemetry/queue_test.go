package telemetry

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// The queue's buffer is written slot by slot as its ring goes round, so all of it stays
// resident: a slot must be a few words, the outcome behind a pointer (an Outcome inline made
// the default queue 3.5 MB of live heap).
func TestQueueSlotIsAFewWords(t *testing.T) {
	if size := unsafe.Sizeof(item{}); size > 48 {
		t.Errorf("a queue slot is %d bytes, want at most 48: the outcome must not be inline", size)
	}
}

// A handled outcome goes back to the pool cleared: the next request's record starts empty and
// the pool keeps no request's strings and attempts alive.
func TestHandledOutcomeIsClearedForReuse(t *testing.T) {
	var buf bytes.Buffer
	tel, err := New(context.Background(), Options{Log: slog.New(slog.NewJSONHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close(context.Background())
	w := newWorker(tel)
	q := outcomes.Get().(*queuedOutcome)
	q.o = outcome(time.Now()) // a gRPC call's outcome: it writes its own line
	w.handle(item{o: q})
	w.flush()
	// The positive case first: the outcome was handled while it was filled in.
	if line := buf.String(); !strings.Contains(line, `"model":"gpt-x"`) {
		t.Fatalf("the outcome's access line is missing or wrong: %q", line)
	}
	if q.o.RequestID != "" || q.o.Model != "" || q.o.Attempts != nil || q.o.Cost.Valid || q.logged {
		t.Errorf("a handled outcome went back to the pool with its request's data: %+v", q.o)
	}
}
