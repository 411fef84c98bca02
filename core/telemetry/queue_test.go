package telemetry

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unsafe"

	"google.golang.org/grpc"
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

// An HTTP request's (or gRPC call's) only outcome is not queued: it waits in the access
// record and is measured with it. An outcome without a request (a gRPC call's), a request's second
// outcome (which sends the first too) and an outcome after the request ended are queued.
func TestAnOnlyOutcomeRidesWithItsAccessRecord(t *testing.T) {
	tel := &Telemetry{queue: make(chan item, 16), metricsOn: true} // no worker: the queue stays as Record leaves it
	start := time.Now()
	drain := func() (outcomes, accesses int, last *access) {
		for {
			select {
			case it := <-tel.queue:
				if it.o != nil {
					outcomes++
				}
				if it.a != nil {
					accesses, last = accesses+1, it.a
				}
			default:
				return
			}
		}
	}
	tel.Record(context.Background(), outcome(start))
	if o, a, _ := drain(); o != 1 || a != 0 {
		t.Fatalf("a gRPC call's outcome: %d outcomes and %d access records queued, want 1 and 0", o, a)
	}
	for _, c := range []struct {
		n    int
		grpc bool
	}{{0, false}, {1, false}, {2, false}, {3, false}, {0, true}, {1, true}, {2, true}} {
		n := c.n
		var ctx context.Context
		record := func(rctx context.Context) {
			for range n {
				tel.Record(rctx, outcome(start))
			}
			ctx = rctx
		}
		if c.grpc { // a call on the gRPC listener has an access record too
			_, _ = tel.unary(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/gateway.v1.Chat/Complete"}, func(rctx context.Context, _ any) (any, error) {
				record(rctx)
				return nil, nil
			})
		} else {
			h := tel.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { record(r.Context()) }))
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/v1/chat/completions", nil))
		}
		o, acc, a := drain()
		want := n // every outcome, when there are two or more
		if n == 1 {
			want = 0
		}
		if n == 0 {
			want = 0
		}
		if o != want || acc != 1 || a.held != (n == 1) || a.outcomes != n {
			t.Errorf("%d outcomes: %d outcomes and %d access records queued, held %v, want %d and 1, held %v", n, o, acc, a.held, want, n == 1)
		}
		// After the request ended: queued (not held: its record is gone to the worker), and a
		// first outcome still held with it (no worker has measured it here), each once.
		tel.Record(ctx, outcome(start))
		want = 1
		if n == 1 {
			want = 2
		}
		if o, _, _ := drain(); o != want || a.held {
			t.Errorf("%d outcomes, then one after the end: %d queued, held %v, want %d, not held", n, o, a.held, want)
		}
	}
}
