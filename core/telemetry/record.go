package telemetry

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"modelgateway/core/rpc"
)

// item is one queued record: an HTTP request's access record, or an outcome of core. It is
// a few words, the outcome behind a pointer: the queue's buffer has QueueSize slots and, as
// the channel's ring turns, every one of them is written and stays resident. With the
// outcome inline (about 440 bytes) the default queue alone held 3.5 MB of live heap, which
// the GC's target doubled, for a backlog that is a few hundred records at most (one 50 ms
// drain); by pointer it is 256 KiB, and the outcomes in flight come from a pool.
type item struct {
	a *access
	o *queuedOutcome
	// barrier is closed when everything queued before it has been handled.
	barrier chan struct{}
	stop    bool // ends the background goroutine
}

// queuedOutcome is an outcome on its way to the worker, recycled once handled (outcomes).
type queuedOutcome struct {
	o      rpc.Outcome
	parent trace.SpanContext
	// logged: the outcome belongs to an HTTP request whose access line is written from a;
	// otherwise (a gRPC call) the outcome writes its own.
	logged bool
}

// outcomes recycles queuedOutcomes: the worker puts each back after handling it, so that the
// steady state allocates none.
var outcomes = sync.Pool{New: func() any { return new(queuedOutcome) }}

// release clears q (it must not keep a request's strings and attempts alive) and recycles it.
func (q *queuedOutcome) release() {
	*q = queuedOutcome{}
	outcomes.Put(q)
}

// Record implements rpc.Observer: the outcome joins its request's access record and is queued for
// metrics and spans. It never blocks: with the queue full the record is counted and dropped.
//
// An HTTP request's first outcome, nearly always its only one, is not queued: it waits in the
// access record, and the worker measures it with the access line (held), which spares a
// copy of the outcome, a pooled record and a pass through the queue per request. A second
// outcome (a realtime session's next response) sends the first to the queue after all, and
// itself, each as it came, before access.add folds the earlier ones into it for the access
// line: each outcome is measured once, with its own usage, cost and attempts. The client
// spans of an HTTP request's outcomes are written from its access record.
func (t *Telemetry) Record(ctx context.Context, o rpc.Outcome) {
	a, _ := ctx.Value(accessKey{}).(*access)
	if a == nil {
		t.queueOutcome(ctx, &o, false)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.metricsOn {
		if a.held {
			a.held = false
			t.queueOutcome(ctx, &a.last, true) // the first, still as it came
		}
		if a.outcomes == 0 && !a.ended {
			a.held = true
		} else {
			t.queueOutcome(ctx, &o, true)
		}
	}
	a.addLocked(&o)
}

// queueOutcome queues a copy of o for the worker; logged: it belongs to an HTTP request,
// whose access record writes its line and spans.
func (t *Telemetry) queueOutcome(ctx context.Context, o *rpc.Outcome, logged bool) {
	q := outcomes.Get().(*queuedOutcome)
	q.o, q.parent, q.logged = *o, trace.SpanContextFromContext(ctx), logged
	if !t.enqueue(item{o: q}) {
		q.release()
	}
}

// enqueue queues it unless the queue is full or closed; false when it was not queued.
func (t *Telemetry) enqueue(it item) bool {
	if t.closed.Load() {
		return false
	}
	select {
	case t.queue <- it:
		return true
	default:
		t.dropped.Add(1)
		return false
	}
}

// Sync waits until everything recorded before it has become metrics, spans and log lines, or
// ctx ends (shutdown and tests).
func (t *Telemetry) Sync(ctx context.Context) {
	if t.closed.Load() {
		return
	}
	b := make(chan struct{})
	select {
	case t.queue <- item{barrier: b}:
	case <-ctx.Done():
		return
	}
	select {
	case <-b:
	case <-ctx.Done():
	}
}

// drainEvery is how often the background goroutine empties the queue. It never waits on the
// channel itself: a request's send then only writes into the buffer, and never wakes a
// parked goroutine (a futex call and a context switch per request otherwise).
const drainEvery = 50 * time.Millisecond

// run is the background goroutine: everything per request that costs more than a field write
// happens here.
func (t *Telemetry) run() {
	defer close(t.done)
	w := newWorker(t)
	tick := time.NewTicker(drainEvery)
	defer tick.Stop()
	for range tick.C {
	drain:
		for {
			select {
			case it := <-t.queue:
				if it.stop {
					w.flush()
					return
				}
				w.handle(it)
			default:
				w.flush()
				break drain
			}
		}
	}
}

func (w *worker) handle(it item) {
	t := w.t
	switch {
	case it.barrier != nil:
		w.flush()
		close(it.barrier)
	case it.a != nil:
		w.access(it.a)
	case it.o != nil:
		q := it.o
		if t.metricsOn {
			w.metrics(&q.o)
		}
		if t.tracingOn && !q.logged {
			ctx := context.Background()
			if q.parent.IsValid() {
				ctx = trace.ContextWithSpanContext(ctx, q.parent)
			}
			w.clientSpans(ctx, &q.o)
		}
		if !q.logged {
			w.requests(q.o.EndpointFamily, q.o.Status)
			w.line(&q.o, nil)
		}
		// Nothing above keeps a pointer into q: the line is formatted, the metrics counted.
		q.release()
	}
}
