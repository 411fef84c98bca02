package telemetry

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"modelgateway/core/rpc"
	"modelgateway/core/wire/routes"
)

// access is what one HTTP request leaves for its access line: filled by the handler's
// goroutine, by Record for the outcomes core produced on its behalf, and by the front through
// apierror.Write for the spec code of an error answer.
type access struct {
	method, path, requestID string
	start, end, firstByte   time.Time
	status                  int
	grpc                    bool // a call on the gRPC listener: its server span is otelgrpc's
	bytes                   int64
	span, parent            trace.SpanContext // the request's span and the caller's

	mu       sync.Mutex // Record may run on another goroutine (realtime responses)
	code     string     // the spec code the front answered with
	outcomes int
	last     rpc.Outcome // the last outcome, with usage and cost summed over all of them
	// held: last is the request's first outcome, not queued; the worker measures it when it
	// handles the record (Record). ended: the record is queued, or on its way (Handler).
	held, ended bool
}

type accessKey struct{}

// add folds an outcome of the request in: a realtime session has one per response and its own.
func (a *access) add(o *rpc.Outcome) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.addLocked(o)
}

// addLocked is add under a.mu.
func (a *access) addLocked(o *rpc.Outcome) {
	if a.outcomes > 0 {
		prev := &a.last
		u := &o.Usage
		// Only reliable usage is summed: that is what was charged.
		if prev.Usage.Reliable {
			u.Input += prev.Usage.Input
			u.CachedInput += prev.Usage.CachedInput
			u.CacheWrite += prev.Usage.CacheWrite
			u.Output += prev.Usage.Output
			u.Reasoning += prev.Usage.Reasoning
			u.AudioInput += prev.Usage.AudioInput
			u.AudioOutput += prev.Usage.AudioOutput
			u.Reliable = true
		}
		if prev.Cost.Valid {
			if o.Cost.Valid {
				o.Cost.Decimal = o.Cost.Decimal.Add(prev.Cost.Decimal)
			} else {
				o.Cost = prev.Cost
			}
		}
		if len(o.Attempts) == 0 {
			o.Attempts = prev.Attempts
		}
		if o.FirstByteTime.IsZero() {
			o.FirstByteTime = prev.FirstByteTime
		}
	}
	a.outcomes++
	a.last = *o
}

// Handler wraps the client HTTP handler: one access line and one gateway_requests_total point
// per request, and a server span when tracing is on (written later, see trace.go).
func (t *Telemetry) Handler(next http.Handler) http.Handler {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The record, the writer and the context node that carries the record: one allocation.
		x := &httpAccess{access: access{start: time.Now()}}
		a, rw := &x.access, &x.rw
		rw.ResponseWriter, rw.a = w, a
		ctx := r.Context()
		if t.tracingOn {
			ctx = t.startSpan(r, a)
		}
		x.ctx = accessContext{Context: ctx, a: a}
		// The request's copy under that context lives in x too: WithContext's own copy,
		// inlined and not kept, stays on the stack.
		x.req = *r.WithContext(&x.ctx)
		r = &x.req
		// Deferred, so that an answer broken off with http.ErrAbortHandler (a binary answer
		// that went out uncharged) is still logged and counted as the panic goes up to net/http.
		defer func() {
			a.end = time.Now()
			// The query is never logged: the content-generation protocol may carry the key there.
			// The canonical key read straight from the map: Get's check of the key cost more.
			a.method, a.path = r.Method, r.URL.Path
			if v := w.Header()["X-Request-Id"]; len(v) > 0 {
				a.requestID = v[0]
			}
			t.finish(a)
		}()
		next.ServeHTTP(rw, r)
	})
	return h
}

// finish queues a request's or call's access record; an outcome recorded after it is queued
// on its own (Record).
func (t *Telemetry) finish(a *access) {
	a.mu.Lock()
	a.ended = true
	a.mu.Unlock()
	t.enqueue(item{a: a})
}

// httpAccess is what Handler allocates per request.
type httpAccess struct {
	access
	rw  responseWriter
	ctx accessContext
	req http.Request
}

// accessContext carries a request's access record: context.WithValue(ctx, accessKey{}, a)
// without the allocation of its own node.
type accessContext struct {
	context.Context
	a *access
}

func (c *accessContext) Value(k any) any {
	if _, ok := k.(accessKey); ok {
		return c.a
	}
	return c.Context.Value(k)
}

// responseWriter observes status, size and the time of the first byte. It passes flushes,
// hijacks and ReadFrom through, and unwraps for http.ResponseController.
type responseWriter struct {
	http.ResponseWriter
	a *access
}

func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// RecordErrorCode implements apierror.CodeRecorder.
func (w *responseWriter) RecordErrorCode(code string) {
	w.a.mu.Lock()
	w.a.code = code
	w.a.mu.Unlock()
}

func (w *responseWriter) WriteHeader(code int) {
	if w.a.status == 0 && code >= 200 {
		w.a.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) wrote() {
	if w.a.firstByte.IsZero() {
		w.a.firstByte = time.Now()
		if w.a.status == 0 {
			w.a.status = http.StatusOK
		}
	}
}

func (w *responseWriter) Write(p []byte) (int, error) {
	w.wrote()
	n, err := w.ResponseWriter.Write(p)
	w.a.bytes += int64(n)
	return n, err
}

func (w *responseWriter) ReadFrom(r io.Reader) (int64, error) {
	w.wrote()
	var (
		n   int64
		err error
	)
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(r)
	} else {
		n, err = io.Copy(struct{ io.Writer }{w.ResponseWriter}, r)
	}
	w.a.bytes += n
	return n, err
}

// Flush implements http.Flusher, for handlers that flush through the interface.
func (w *responseWriter) Flush() { _ = w.FlushError() }

// FlushError is what http.ResponseController.Flush calls: the wrapped writer's flush and its
// error (the client has gone), which Flush alone would lose; a stream's lazyflush.Writer
// flushes through this at every real flush.
func (w *responseWriter) FlushError() error {
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.a.status == 0 {
		w.a.status = http.StatusSwitchingProtocols
	}
	return c, rw, err
}

// FamilyOf is the endpoint_family label of a path: the contract's family for client routes,
// else one of a few fixed words, so that no path of a client's choosing becomes a label.
func FamilyOf(path string) string {
	if f, ok := routes.Fixed(path); ok {
		return f
	}
	switch {
	case strings.HasPrefix(path, "/v1beta/models/") && strings.Contains(path, ":"):
		if f, ok := routes.ContentAction(path[strings.LastIndexByte(path, ':')+1:]); ok {
			return f
		}
		return "other"
	case strings.HasPrefix(path, "/v1/models/") && strings.Contains(path, ":"):
		// The /v1 alias of content generation (@google/genai 3.x's default); any other colon is
		// part of a model id (OpenAI's "ft:" fine-tunes) on the discovery route.
		if f, ok := routes.ContentAction(path[strings.LastIndexByte(path, ':')+1:]); ok {
			return f
		}
		return "discovery"
	case path == "/v1/models" || strings.HasPrefix(path, "/v1/models/") || strings.HasPrefix(path, "/v1beta/models") ||
		path == "/v1/balance" || path == "/v1/key" || path == "/v1/catalog" || strings.HasPrefix(path, "/v1beta/chat-compat/") || strings.HasPrefix(path, "/v1beta/openai/"):
		return "discovery"
	case strings.HasPrefix(path, "/admin/") || strings.HasPrefix(path, "/gateway.admin."):
		return "admin"
	case strings.HasPrefix(path, "/gateway.catalog."):
		return "discovery"
	case path == "/healthz" || path == "/readyz":
		return "health"
	case path == "/status" || strings.HasPrefix(path, "/status/") || path == "/docs" || strings.HasPrefix(path, "/docs/"):
		return "status"
	}
	return "other"
}

// RouteOf is a path with its client-chosen parts replaced, for span names.
func RouteOf(path string) string {
	if _, ok := routes.Fixed(path); ok {
		return path
	}
	switch {
	case strings.HasPrefix(path, "/v1beta/models/") && strings.Contains(path, ":"):
		return "/v1beta/models/{model}:" + path[strings.LastIndexByte(path, ':')+1:]
	case strings.HasPrefix(path, "/v1/models/") && FamilyOf(path) != "discovery":
		return "/v1/models/{model}:" + path[strings.LastIndexByte(path, ':')+1:]
	case strings.HasPrefix(path, "/v1/models/"):
		return "/v1/models/{model}"
	case strings.HasPrefix(path, "/v1beta/models/"):
		return "/v1beta/models/{model}"
	case strings.HasPrefix(path, "/admin/"):
		return "/admin/..."
	}
	if f := FamilyOf(path); f == "other" {
		return "other"
	}
	return path
}
