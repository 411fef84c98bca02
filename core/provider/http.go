package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"modelgateway/core/provider/h1"
	"modelgateway/core/wire/callmd"
	"modelgateway/core/wire/lazyflush"
)

// Client is the HTTP client every adapter shares: pooled keep-alive connections, no total
// timeout (a long generation is not a failure), proxy settings from the environment. Its
// transport is the lean HTTP/1.1 client (core/provider/h1): each call runs in the caller's
// goroutine, without net/http.Transport's per-connection goroutines and hand-offs, which
// cost about 40 µs of CPU per non-streamed request. What h1 does not serve (a proxy from
// the environment, above all) goes to stdTransport. Its answers carry only the header fields
// the adapters read (answerHeaders).
var Client = &http.Client{Transport: &h1.Transport{
	ResponseHeaders:     answerHeaders,
	Fallback:            stdTransport,
	Proxy:               http.ProxyFromEnvironment,
	DialContext:         stdTransport.DialContext,
	MaxIdleConns:        stdTransport.MaxIdleConns,
	MaxIdleConnsPerHost: stdTransport.MaxIdleConnsPerHost,
	IdleConnTimeout:     stdTransport.IdleConnTimeout,
	TLSHandshakeTimeout: stdTransport.TLSHandshakeTimeout,
}}

// answerHeaders are the fields of an upstream's answer the gateway reads: its media type
// (passed on to the client with a passthrough answer) and, on a refusal, when to try again
// (RetryAfter). An API answers with twenty-odd more (rate limits, tracing, caching), each a
// string, a slice and map room per request were they kept.
var answerHeaders = []string{HeaderContentType, "Retry-After", "Retry-After-Ms"}

// stdTransport is net/http's, for the requests h1 leaves to it.
var stdTransport = &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	ForceAttemptHTTP2:     true,
	MaxIdleConns:          1024,
	MaxIdleConnsPerHost:   256,
	IdleConnTimeout:       90 * time.Second,
	TLSHandshakeTimeout:   10 * time.Second,
	ExpectContinueTimeout: time.Second,
}

// uploadClient sends the bodies that stream from a client while they are sent (multipart
// uploads, chunked): with the default 4 KiB write buffer each 32 KiB piece went out as
// several system calls; a 64 KiB buffer sends it in one. Few of its connections stay idle,
// as each holds that buffer.
var uploadClient = func() *http.Client {
	t := stdTransport.Clone()
	t.WriteBufferSize = 64 << 10
	t.MaxIdleConnsPerHost = 16
	return &http.Client{Transport: t}
}()

var (
	errFirstByte = errors.New("no answer from the upstream within the first-byte timeout")
	errIdle      = errors.New("the upstream stream paused longer than the idle timeout")
)

// maxErrorBody bounds how much of an upstream error body is read.
const maxErrorBody = 64 << 10

// Do sends req with the call's timeouts. A success status returns the response whose body is
// guarded by the idle timeout; anything else is an *Error, the body consumed and closed.
// The first-byte timeout covers the response headers and the first body byte.
func Do(req *http.Request, t Timeouts) (*http.Response, error) {
	return do(req, t, nil)
}

// DoUpload is Do for a request whose body streams from the client while it is sent: every
// piece of the upload restarts the first-byte timeout, so that a large or slow upload is not
// taken for a silent upstream; the timeout then counts from the upload's last byte.
func DoUpload(req *http.Request, body io.Reader, t Timeouts) (*http.Response, error) {
	return do(req, t, body)
}

func do(req *http.Request, t Timeouts, upload io.Reader) (*http.Response, error) {
	if t.FirstByte <= 0 {
		t.FirstByte = DefaultFirstByteTimeout
	}
	if t.Idle <= 0 {
		t.Idle = DefaultIdleTimeout
	}
	// The upstream request ends with the client's, except while a finished answer's body is
	// drained (Release): then it is detached from the client and bounded by drainTimeout.
	// The answer's body is made now and is the request's context too (one object); the rest
	// is filled in once the upstream has answered.
	// A request NewRequest made carries its call as its context already: armed here, once.
	// Any other request (or one sent a second time) gets a call of its own, whose request is
	// the original's copy with that context.
	tb, prepared := preparedCall(req)
	if !prepared {
		tb = &timedBody{}
		tb.call.parent = req.Context()
		if c, ok := tb.call.parent.(*call); ok && c.body != nil {
			tb.call.parent = c.parent // a NewRequest request sent again: the client's context
		}
		req = req.WithContext(&tb.call)
	}
	tb.idle = t.Idle
	parent := tb.call.parent
	// The front's request context is watched directly (no stop func, no func value);
	// any other context, or one that ended already, through context.AfterFunc.
	if w := callmd.WatchableOf(parent); w != nil && w.Watch(tb) {
		tb.watched = w
	} else {
		tb.stopAfter = context.AfterFunc(parent, tb.parentEnded)
	}
	// One timer serves both phases: first-byte until a body byte has arrived, idle after.
	timer := startCallTimer(t.FirstByte, tb)
	client := Client
	if upload != nil {
		client = uploadClient
		req.Body = io.NopCloser(&uploadReader{r: upload, touch: func() { timer.reset(tb, t.FirstByte) }})
		req.ContentLength = -1
		if br, ok := upload.(*bytes.Reader); ok {
			req.ContentLength = int64(br.Len())
		}
	}
	// The transport itself, as a reverse proxy calls it: http.Client would follow redirects
	// (a provider API does not redirect a POST, and a followed one would resend the request
	// and its credentials elsewhere) and copies every request's headers for them.
	resp, err := client.Transport.RoundTrip(req)
	if err != nil {
		timer.stop(tb)
		tb.detach()
		cause := tb.call.Cause()
		tb.call.cancel(nil)
		return nil, transportError(parent, cause, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer func() { timer.stop(tb); tb.detach(); tb.call.cancel(nil) }()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		e := StatusError(resp.StatusCode, raw)
		e.RetryAfter = RetryAfter(resp.Header, time.Now())
		return nil, e
	}
	// A streamed answer's client output is flushed before each read of this body that may
	// wait, so its encoder need not flush after every event (core/wire/lazyflush).
	flush := lazyflush.From(parent)
	flush.Coalesce()
	tb.rc, tb.size, tb.timer, tb.flush = resp.Body, resp.ContentLength, timer, flush
	tb.buffered, _ = resp.Body.(interface{ Buffered() int })
	resp.Body = tb
	return resp, nil
}

// preparedCall is the call NewRequest made for req, when it has not been sent yet; it is then
// taken (a second Do of the same request makes a call of its own).
func preparedCall(req *http.Request) (*timedBody, bool) {
	c, ok := req.Context().(*call)
	if !ok || c.body == nil || c.body.taken {
		return nil, false
	}
	c.body.taken = true
	return c.body, true
}

func transportError(parent context.Context, cause, err error) *Error {
	switch {
	case errors.Is(cause, errFirstByte):
		return &Error{Message: "the upstream did not answer in time", Timeout: true, Retryable: true, Err: cause}
	case parent.Err() != nil:
		return &Error{Message: "the request was cancelled", Err: parent.Err()}
	}
	return &Error{Message: "the upstream could not be reached", Retryable: true, Err: err}
}

// StatusError classifies a non-success upstream answer. Every protocol we speak puts its
// message at error.message.
func StatusError(status int, body []byte) *Error {
	e := &Error{Status: status, Retryable: RetryableStatus(status)}
	msg := Redact(gjson.GetBytes(body, "error.message").String())
	if len(msg) > 500 {
		msg = msg[:500] + "..."
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		// The message may quote the provider credential: never pass it on.
		e.Message = fmt.Sprintf("the upstream refused the gateway's credentials (status %d)", status)
	case msg != "":
		e.Message = fmt.Sprintf("upstream status %d: %s", status, msg)
	default:
		e.Message = fmt.Sprintf("upstream status %d", status)
	}
	return e
}

// RetryableStatus tells the upstream answers another attempt may get past (contract.md,
// "Routing"): a timeout, a rate limit, an overloaded or failing server. 501 and the like
// will answer the same again.
func RetryableStatus(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, 529:
		return true
	}
	return false
}

// RetryAfter reads an answer's retry-after: seconds or an HTTP date (and the millisecond
// header some providers send); 0 when absent or unreadable.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if ms := h.Get("Retry-After-Ms"); ms != "" {
		if n, err := strconv.ParseFloat(ms, 64); err == nil && n > 0 {
			return time.Duration(n * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(n * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// timedBody re-arms the timer on every read: first-byte until the first byte, idle after it.
type timedBody struct {
	call call // the upstream request's context
	rc   io.ReadCloser
	size int64 // the declared length, -1 when unknown (ReadAll sizes its buffer by it)
	// watched is the client's request context when it is the front's (callmd.Watchable),
	// which tells tb itself of its end; stopAfter is context.AfterFunc's stop otherwise.
	watched   callmd.Watchable
	stopAfter func() bool
	timer     *callTimer
	idle      time.Duration
	started   atomic.Bool // a body byte has arrived
	// eof: Read has returned io.EOF, the body's end (its connection is back in the pool
	// already); Release then has nothing left to drain. Read and Release run on the
	// answer's reader, one after the other.
	eof bool
	// flush sends the client what the gateway has written of the answer so far; nil when the
	// answer is not a coalesced stream.
	flush *lazyflush.Writer
	// buffered is rc's count of the bytes its next Read returns without waiting, when rc
	// keeps one (core/provider/h1's answers): a read that cannot wait needs no flush before
	// it, and a flush in the middle of an answer that has arrived whole is a system call and
	// a packet of its own for the client.
	buffered interface{ Buffered() int }
	// reqBody is the request's body when NewRequest made the call; taken once Do has used
	// the call.
	reqBody requestBody
	taken   bool
	// req is the upstream request when NewRequest made the call.
	req http.Request
}

// Read flushes the client's pending output first when the read may wait for the upstream:
// what the gateway already has must not wait with it. Callers read through a buffer (the SSE
// reader's 4 KiB), so this runs once per arrival from the upstream, not once per event; a
// read the body answers from bytes that have arrived (buffered) waits for nothing, and an
// arrival larger than the caller's buffer is then flushed once, not once per buffer.
func (b *timedBody) Read(p []byte) (int, error) {
	// A failed flush (the client has gone) is the encoder's to report, at its next event;
	// meanwhile the client's cancellation ends this read too.
	if b.buffered == nil || b.buffered.Buffered() == 0 {
		_ = b.flush.BeforeWait()
	}
	n, err := b.rc.Read(p)
	if n > 0 {
		b.started.Store(true)
		b.timer.reset(b, b.idle)
	}
	if err == io.EOF {
		b.eof = true
	}
	if err != nil && !errors.Is(err, io.EOF) {
		cause := b.call.Cause()
		switch {
		case errors.Is(cause, errFirstByte):
			return n, &Error{Message: "the upstream did not answer in time", Timeout: true, Retryable: !b.started.Load(), Err: cause}
		case errors.Is(cause, errIdle):
			return n, &Error{Message: "the upstream stream stalled", Timeout: true, Err: cause}
		case b.call.parent.Err() != nil:
			return n, &Error{Message: "the request was cancelled", Err: b.call.parent.Err()}
		}
		return n, &Error{Message: "the upstream connection failed mid-answer", Retryable: !b.started.Load(), Err: err}
	}
	return n, err
}

func (b *timedBody) Close() error {
	b.timer.stop(b)
	b.detach()
	err := b.rc.Close()
	b.call.cancel(nil)
	return err
}

// parentEnded passes the client's cancellation on to the upstream request.
func (b *timedBody) parentEnded() { b.call.cancel(context.Cause(b.call.parent)) }

// ContextEnded implements callmd.Watcher: the client's request context has ended.
func (b *timedBody) ContextEnded() { b.parentEnded() }

// detach stops the client's cancellation from reaching the call, and reports whether it had
// not reached it yet.
func (b *timedBody) detach() bool {
	if b.watched != nil {
		return b.watched.Unwatch(b)
	}
	return b.stopAfter()
}

// timeUp is the timer's: the first byte, or the next after one, came too late.
func (b *timedBody) timeUp() {
	if b.started.Load() {
		b.call.cancel(errIdle)
	} else {
		b.call.cancel(errFirstByte)
	}
}

// Bounds of Release's background read.
const (
	drainTimeout = 2 * time.Second
	maxDrain     = 64 << 10
)

// Release closes the body of an answer that was read to its protocol's terminal event.
// net/http keeps a connection only when its body was read to the end, and an upstream ends
// the body (a chunked answer's last chunk) just after that event, usually a moment later:
// closing at once would cost a new connection — and with TLS a handshake — per streamed
// answer. So the rest is read in the background, detached from the client's request (which
// ends as soon as the answer is delivered), at most maxDrain bytes within drainTimeout;
// an upstream that sends more or keeps the body open loses the connection as before.
func Release(body io.ReadCloser) error {
	b, ok := body.(*timedBody)
	if !ok || b.eof {
		// Read to its end (the usual case: the last chunk arrives with the terminal event):
		// nothing to drain, and no goroutine or timer for it.
		return body.Close()
	}
	if !b.detach() {
		return b.Close() // the client is already gone: so is the request
	}
	b.timer.reset(b, drainTimeout)
	go func() {
		_, _ = io.CopyN(io.Discard, b.rc, maxDrain)
		_ = b.Close()
	}()
	return nil
}

// callTimer is an upstream call's first-byte and idle timer, recycled. A stopped timer stays
// in the runtime's heap of timers until that heap is cleaned (up to a quarter of it, and
// longer while no timer there runs), with its function: time.AfterFunc(d, b.timeUp) kept the
// call's timedBody, and through it the call's request, context and answer, alive after the
// call; after the bench's saturating scenarios a stopped timer's call held each of some 150
// requests. The recycled timer's function reaches the body through b, emptied when the call
// stops it; and the timer and its func value were two allocations per call.
type callTimer struct {
	t *time.Timer
	b atomic.Pointer[timedBody]
	// spent: the timer fired during this call (a Reset or Stop found it expired). Its
	// function may still be about to read b, so it is not recycled: a later call's body
	// there would get this call's timeout.
	spent atomic.Bool
}

var callTimers sync.Pool

// startCallTimer arms a timer that runs b.timeUp after d.
func startCallTimer(d time.Duration, b *timedBody) *callTimer {
	ct, _ := callTimers.Get().(*callTimer)
	if ct == nil {
		ct = new(callTimer)
		ct.b.Store(b)
		ct.t = time.AfterFunc(d, ct.fire)
		return ct
	}
	ct.b.Store(b)
	ct.t.Reset(d) // stopped when recycled: it cannot have fired since
	return ct
}

func (ct *callTimer) fire() {
	if b := ct.b.Load(); b != nil {
		b.timeUp()
	}
}

// reset re-arms the timer of b's call for d from now; once the call has stopped it, it is
// not b's any more, and reset does nothing.
func (ct *callTimer) reset(b *timedBody, d time.Duration) {
	if ct.b.Load() != b {
		return
	}
	if !ct.t.Reset(d) {
		ct.spent.Store(true)
	}
}

// stop ends the timer of b's call and lets go of b: the first stop of the call (a body is
// closed more than once), and only b's; the timer is recycled unless it fired during the
// call.
func (ct *callTimer) stop(b *timedBody) {
	if !ct.b.CompareAndSwap(b, nil) {
		return
	}
	if !ct.t.Stop() {
		ct.spent.Store(true)
	}
	if !ct.spent.Load() {
		callTimers.Put(ct)
	}
}

// uploadReader restarts the first-byte timer on every read of an upload.
type uploadReader struct {
	r     io.Reader
	touch func()
}

func (u *uploadReader) Read(p []byte) (int, error) {
	n, err := u.r.Read(p)
	u.touch()
	return n, err
}
