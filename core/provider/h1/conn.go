package h1

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"modelgateway/core/wire/clock"
)

// maxHeadCopy bounds the request body copied behind its head so that both go out in one
// write; a larger body is written with the head in one writev (TCP) instead.
const maxHeadCopy = 16 << 10

// earlyAnswerWait is how long a failed request write waits for an answer the server may
// have sent before it stopped reading (a 413 for a body too large), as net/http prefers
// that answer to the write's error.
const earlyAnswerWait = 50 * time.Millisecond

// closedIdleWindow is how soon after a reused connection's request was written its failure
// must come for the request to be sent again: a server that had closed the connection while
// it was idle never read the request, and its close is already on the way. A later failure
// may be an upstream that read the request and died while generating: sending it again would
// run (and bill) the generation twice, so it is the caller's error to handle, as net/http
// does not resend a written POST either.
const closedIdleWindow = 50 * time.Millisecond

var (
	errBodyLength = errors.New("h1: the request body's length differs from its ContentLength")
	errNotPooled  = errors.New("h1: connection not kept")
	errUpgrade    = errors.New("h1: the server switched protocols unasked")
	errMany1xx    = errors.New("h1: too many 1xx informational responses")
)

// conn is one pooled connection, used by one exchange at a time.
type conn struct {
	t   *Transport
	key connKey
	raw net.Conn // the TCP connection: closed to end an exchange at once
	nc  net.Conn // raw, or the TLS connection over it
	tls *tls.ConnectionState
	// br is taken from readers for an exchange (reader) and given back when the connection
	// goes back to the pool (release): an idle connection has nothing buffered to keep.
	br *bufio.Reader
	bw *bufio.Writer // for chunked request bodies only, made on first use
	p  parser
	hw headWriter
	// head is the answer's head being read; abortFn is abort as a func value, made once.
	head    head
	abortFn func()
	peeker  peeker // checks the connection before a reuse (alive); waits with no buffer (awaitBytes)
	// fast: a bufferless wait of this exchange found bytes there already (awaitBytes).
	fast bool
	// Of the current exchange.
	ctx     context.Context
	trace   *httptrace.ClientTrace
	keep    bool // the connection may serve another exchange after this one
	reused  bool
	aborted atomic.Bool // the exchange's context ended; raw is closed
	closed  atomic.Bool
	// Of the idle period; guarded by t.mu.
	inPool    bool
	idleAt    int64 // clock.Mono when pooled: only the idle time is read from it
	idleTimer *time.Timer
}

func newConn(t *Transport, key connKey, raw net.Conn) *conn {
	c := &conn{t: t, key: key, raw: raw, nc: raw}
	c.abortFn = c.abort
	c.p.keep = t.kept()
	return c
}

// answer holds a response and its body in one allocation.
type answer struct {
	resp http.Response
	body body
	// values holds the header's values when they fit (parser.room): an answer's header is a
	// few fields once the transport keeps only those its client reads (ResponseHeaders).
	values [answerValues]string
}

const answerValues = 4

var chunkedTE = []string{"chunked"}

// roundTrip runs one exchange. retry reports a failure before any byte of the answer on a
// reused connection, at once (closedIdleWindow): the server closed it while it was idle.
func (c *conn) roundTrip(ctx context.Context, req *http.Request, trace *httptrace.ClientTrace, compress bool) (_ *http.Response, retry bool, _ error) {
	c.ctx, c.trace = ctx, trace
	c.reader()
	stop := afterFunc(ctx, c.abortFn)
	werr := c.writeRequest(req, compress)
	wrote := clock.Mono() // only how soon a failure followed the write is read from it
	if werr != nil {
		if c.aborted.Load() {
			stop()
			c.close()
			return nil, false, c.readError(werr)
		}
		_ = c.nc.SetReadDeadline(time.Now().Add(earlyAnswerWait))
	}
	if _, err := c.br.Peek(1); err != nil {
		stop()
		c.close()
		if werr != nil {
			err = werr
		}
		retry := c.reused && !c.aborted.Load() && connGone(err) && (werr != nil || time.Duration(clock.Mono()-wrote) < closedIdleWindow)
		return nil, retry, c.readError(err)
	}
	a := &answer{}
	c.p.room = a.values[:0]
	h, err := c.readFinalHead()
	c.p.room = nil
	if err == nil && werr != nil {
		err = c.nc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		stop()
		c.close()
		return nil, false, c.readError(err)
	}
	resp := &a.resp
	resp.Status, resp.StatusCode = h.statusText, h.status
	resp.Proto, resp.ProtoMajor, resp.ProtoMinor = "HTTP/1.1", 1, h.minor
	if h.minor == 0 {
		resp.Proto = "HTTP/1.0"
	}
	resp.Header, resp.Request, resp.TLS = h.header, req, c.tls
	c.keep = !h.closeAfter && werr == nil && !req.Close && !hasToken(req.Header["Connection"], "close")
	switch {
	case req.Method == http.MethodHead || h.status == http.StatusNoContent || h.status == http.StatusNotModified:
		resp.ContentLength = 0
		if req.Method == http.MethodHead {
			resp.ContentLength = h.contentLen
		}
		resp.Body = http.NoBody
	case h.chunked:
		resp.ContentLength, resp.TransferEncoding = -1, chunkedTE
		a.body.framing = framedChunked
	case h.hasCL && h.contentLen == 0:
		resp.Body = http.NoBody
	case h.hasCL:
		resp.ContentLength = h.contentLen
		a.body.framing, a.body.left = framedLength, h.contentLen
	default:
		resp.ContentLength = -1
		a.body.framing = framedClose
		c.keep = false
	}
	resp.Close = !c.keep
	if resp.Body == http.NoBody {
		c.release(stop, true)
		return resp, false, nil
	}
	a.body.c, a.body.release = c, stop
	resp.Body = &a.body
	if compress && equalFold(first(resp.Header["Content-Encoding"]), "gzip") {
		resp.Body = &gzipBody{body: &a.body}
		resp.Header.Del("Content-Encoding")
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
		resp.Uncompressed = true
	}
	return resp, false, nil
}

// readFinalHead reads the answer's head, skipping informational (1xx) ones.
func (c *conn) readFinalHead() (*head, error) {
	h := &c.head
	for n := 0; ; n++ {
		err := c.p.readHead(c.br, h)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // the first byte had arrived
			}
			return nil, err
		}
		switch {
		case h.status == http.StatusSwitchingProtocols:
			return nil, errUpgrade
		case h.status >= 200:
			return h, nil
		case n >= max1xx:
			return nil, errMany1xx
		}
	}
}

// release ends an exchange whose answer was read to its end: the connection goes back to
// the pool unless the exchange's cancellation fired, or it must not be reused.
func (c *conn) release(stop func() bool, reusable bool) {
	trace := c.trace
	c.ctx, c.trace = nil, nil
	// The answer's header map is the caller's now: a pooled connection that kept it would
	// keep, through the values in the answer's allocation (parser.room) and the answer's
	// Request, the whole of the exchange's request and its context alive while it is idle.
	c.head = head{}
	// Bytes after the answer are no answer to anything sent: the connection is out of step.
	ok := stop() && reusable && c.keep && c.br.Buffered() == 0
	if ok {
		c.releaseReader()
	}
	if !ok || !c.t.put(c) {
		c.close()
		if trace != nil && trace.PutIdleConn != nil {
			trace.PutIdleConn(errNotPooled)
		}
		return
	}
	if trace != nil && trace.PutIdleConn != nil {
		trace.PutIdleConn(nil)
	}
}

// abort ends the exchange in progress: its context has ended.
func (c *conn) abort() {
	c.aborted.Store(true)
	_ = c.raw.Close()
}

func (c *conn) close() {
	if c.closed.CompareAndSwap(false, true) {
		_ = c.nc.Close()
	}
}

// readError is what an exchange reports for a failed read or write: the context's cause
// when it ended the exchange (provider.do classifies by it), the error itself otherwise.
func (c *conn) readError(err error) error {
	if c.aborted.Load() && c.ctx != nil {
		return fmt.Errorf("h1: exchange ended: %w", cause(c.ctx))
	}
	return err
}

// afterFunc is context.AfterFunc, through the context's own AfterFunc where it has one (the
// call context of core/provider): context.AfterFunc would put a context node, a stop func,
// a children map and a done channel of its own around it.
func afterFunc(ctx context.Context, f func()) (stop func() bool) {
	if a, ok := ctx.(interface{ AfterFunc(func()) func() bool }); ok {
		return a.AfterFunc(f)
	}
	return context.AfterFunc(ctx, f)
}

// cause is context.Cause, through the context's own Cause where it has one: the call
// context of core/provider is not made by WithCancelCause, and knows its cause itself.
func cause(ctx context.Context) error {
	if c, ok := ctx.(interface{ Cause() error }); ok {
		if err := c.Cause(); err != nil {
			return err
		}
	}
	return context.Cause(ctx)
}

// connGone reports an error of a connection the server has closed.
func connGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED)
}

// writeRequest writes the request as net/http would (request line, Host, User-Agent, the
// body's length or chunked coding, the headers, Accept-Encoding when asking for gzip) and
// the body, then closes the body.
func (c *conn) writeRequest(req *http.Request, compress bool) error {
	body := req.Body
	if body == http.NoBody {
		body = nil
	}
	if body != nil {
		defer body.Close()
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	h := c.hw.head[:0]
	h = append(h, method...)
	h = append(h, ' ')
	h = append(h, req.URL.RequestURI()...)
	h = append(h, " HTTP/1.1\r\nHost: "...)
	h = append(h, host...)
	h = append(h, "\r\n"...)
	ua := "Go-http-client/1.1"
	if v, ok := req.Header["User-Agent"]; ok {
		ua = ""
		if len(v) > 0 {
			ua = v[0]
		}
	}
	if ua != "" {
		h = append(h, "User-Agent: "...)
		h = append(h, trimOWSString(ua)...)
		h = append(h, "\r\n"...)
	}
	chunked := body != nil && req.ContentLength < 0
	switch {
	case chunked:
		h = append(h, "Transfer-Encoding: chunked\r\n"...)
	case req.ContentLength > 0 || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch:
		// net/http's rule: many servers expect a length for these even when it is 0.
		h = append(h, "Content-Length: "...)
		h = strconv.AppendInt(h, req.ContentLength, 10)
		h = append(h, "\r\n"...)
	}
	for k, vv := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		for _, v := range vv {
			h = append(h, k...)
			h = append(h, ": "...)
			h = append(h, trimOWSString(v)...)
			h = append(h, "\r\n"...)
		}
	}
	if compress {
		h = append(h, "Accept-Encoding: gzip\r\n"...)
	}
	if req.Close && !hasToken(req.Header["Connection"], "close") {
		h = append(h, "Connection: close\r\n"...)
	}
	h = append(h, "\r\n"...)
	c.hw.head = h

	switch {
	case body == nil:
		_, err := c.nc.Write(h)
		return err
	case chunked:
		return c.writeChunked(body)
	}
	// A bytes body (http.NewRequest's NopCloser over a bytes.Reader) hands its whole slice
	// to one Write: it goes out with the head in one system call.
	c.hw.c, c.hw.left, c.hw.pending = c, req.ContentLength, true
	var err error
	if wt, ok := body.(io.WriterTo); ok {
		_, err = wt.WriteTo(&c.hw)
	} else {
		_, err = io.Copy(&c.hw, io.LimitReader(body, req.ContentLength+1))
	}
	if err == nil && c.hw.pending {
		_, err = c.nc.Write(h)
		c.hw.pending = false
	}
	if err == nil && c.hw.left != 0 {
		err = errBodyLength
	}
	if cap(c.hw.head) > maxHeadCopy+4096 {
		c.hw.head = nil // one large request does not keep its buffer on an idle connection
	}
	return err
}

// headWriter writes the head with the first piece of the body.
type headWriter struct {
	c       *conn
	head    []byte
	pending bool // head not yet written
	left    int64
}

func (w *headWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > w.left {
		return 0, errBodyLength
	}
	w.left -= int64(len(p))
	if !w.pending {
		return w.c.nc.Write(p)
	}
	w.pending = false
	if len(w.head)+len(p) <= maxHeadCopy {
		w.head = append(w.head, p...)
		_, err := w.c.nc.Write(w.head)
		return len(p), err
	}
	bufs := net.Buffers{w.head, p}
	_, err := bufs.WriteTo(w.c.nc)
	return len(p), err
}

func (c *conn) writeChunked(body io.Reader) error {
	if c.bw == nil {
		c.bw = bufio.NewWriterSize(c.nc, 4096)
	}
	bw := c.bw
	_, _ = bw.Write(c.hw.head)
	buf := make([]byte, 8<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			var size [16]byte
			_, _ = bw.Write(strconv.AppendInt(size[:0], int64(n), 16))
			_, _ = bw.WriteString("\r\n")
			_, _ = bw.Write(buf[:n])
			if _, werr := bw.WriteString("\r\n"); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	_, _ = bw.WriteString("0\r\n\r\n")
	return bw.Flush()
}
