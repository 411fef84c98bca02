package h1

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"modelgateway/core/wire/clock"
)

// bufferBeforeHead is how much of an answer is held before its head is written: an answer
// that fits, finished by the handler, goes with a Content-Length; a longer one (or one
// flushed) is chunked - net/http's rule, with its 2048 bytes.
const bufferBeforeHead = 2048

// chunkFraming is the most a chunk adds to its data: its size in hex and two CRLFs.
const chunkFraming = 16 + 4

var errAfterHandler = errors.New("h1: write after the handler returned")

// response is the connection's http.ResponseWriter, reused from request to request.
type response struct {
	c   *conn
	hdr http.Header

	head, http10, closeReq bool

	status        int
	wroteHeader   bool
	committed     bool // the head is in bw
	chunked       bool
	contentLength int64 // declared by the handler; -1: none
	written       int64
	buf           []byte
	closeAfter    bool
	hijacked      bool
	handlerDone   bool
	fullDuplex    bool // EnableFullDuplex: the body stays readable after the head
	werr          error
}

func (w *response) reset(p parsed, head bool) {
	clear(w.hdr)
	*w = response{c: w.c, hdr: w.hdr, buf: w.buf[:0], head: head, http10: p.http10, closeReq: p.closeReq,
		contentLength: -1}
}

func (w *response) Header() http.Header { return w.hdr }

func (w *response) WriteHeader(code int) {
	if w.hijacked || w.handlerDone {
		return
	}
	if w.wroteHeader {
		w.c.srv.logf("h1: superfluous WriteHeader call (%d after %d)", code, w.status)
		return
	}
	if code < 100 || code > 999 {
		panic("invalid WriteHeader code " + strconv.Itoa(code))
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		// Informational: written at once, the final answer still to come.
		w.writeInformational(code)
		return
	}
	w.setStatus(code)
}

// setStatus fixes the final status and the length the handler declared.
func (w *response) setStatus(code int) {
	w.wroteHeader, w.status = true, code
	if cl, ok := w.hdr["Content-Length"]; ok && len(cl) > 0 {
		if v, ok := parseContentLength(strings.TrimSpace(cl[0])); ok {
			w.contentLength = v
		} else {
			w.c.srv.logf("h1: invalid Content-Length %q", cl[0])
			delete(w.hdr, "Content-Length")
		}
	}
}

func (w *response) writeInformational(code int) {
	b := w.c.lineBuf[:0]
	b = appendStatusLine(b, code)
	b = w.appendHeaderMap(b)
	b = append(b, "\r\n"...)
	w.c.lineBuf = b
	w.writeRaw(b)
	w.flushRaw()
}

func bodyAllowed(status int) bool {
	return !(status >= 100 && status <= 199 || status == 204 || status == 304)
}

func (w *response) WriteString(s string) (int, error) {
	return w.write(len(s), nil, s)
}

func (w *response) Write(p []byte) (int, error) {
	return w.write(len(p), p, "")
}

func (w *response) write(n int, p []byte, s string) (int, error) {
	if w.hijacked {
		return 0, http.ErrHijacked
	}
	if w.handlerDone {
		return 0, errAfterHandler
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if n == 0 {
		return 0, nil
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	w.written += int64(n)
	if w.contentLength != -1 && w.written > w.contentLength {
		return 0, http.ErrContentLength
	}
	if w.werr != nil {
		return 0, w.werr
	}
	if !w.committed {
		if len(w.buf)+n <= bufferBeforeHead {
			w.buf = append(w.buf, p...)
			w.buf = append(w.buf, s...)
			return n, nil
		}
		w.commit(false)
	}
	if w.head {
		return n, nil
	}
	if w.werr == nil {
		w.c.room(n + chunkFraming) // one system call at the flush, not one more before it
	}
	if w.chunked {
		w.c.lineBuf = append(strconv.AppendInt(w.c.lineBuf[:0], int64(n), 16), "\r\n"...)
		w.writeRaw(w.c.lineBuf)
	}
	if p != nil {
		w.writeRaw(p)
	} else {
		w.writeRawString(s)
	}
	if w.chunked {
		w.writeRawString("\r\n")
	}
	if w.werr != nil {
		return 0, w.werr
	}
	return n, nil
}

func (w *response) writeRaw(b []byte) {
	if w.werr == nil {
		if _, err := w.c.writer().Write(b); err != nil {
			w.writeFailed(err)
		}
	}
}

func (w *response) writeRawString(s string) {
	if w.werr == nil {
		if _, err := w.c.writer().WriteString(s); err != nil {
			w.writeFailed(err)
		}
	}
}

// flushRaw sends what bw holds and gives bw back (conn.writer takes one for the next write).
func (w *response) flushRaw() {
	if w.werr == nil && w.c.bw != nil {
		if err := w.c.bw.Flush(); err != nil {
			w.writeFailed(err)
			return
		}
		w.c.releaseWriter()
	}
}

// writeFailed: the client cannot be written to; as net/http does, cancel the request.
func (w *response) writeFailed(err error) {
	w.werr, w.closeAfter = err, true
	if w.c.ctx != nil {
		w.c.ctx.cancel(errClientGone)
	}
}

// commit writes the head to bw, then what the body buffer holds. final: the handler has
// returned, so a buffered answer gets its exact Content-Length.
func (w *response) commit(final bool) {
	w.committed = true
	h := w.hdr
	allowed := bodyAllowed(w.status)
	// An unread request body: read it away now (before the head can say Connection:
	// close) or give up the connection.
	if b := &w.c.body; w.c.tmpl.Body != http.NoBody && b.unread() && !w.hijacked && (final || !w.fullDuplex) {
		if !b.discardRest() {
			w.closeAfter = true
		}
	}
	if w.closeReq || w.c.srv.inShutdown.Load() || hasToken(headerGet(h, "Connection"), "close") {
		w.closeAfter = true
	}
	var setLength int64 = -1
	if w.contentLength == -1 && allowed {
		if te := headerGet(h, "Transfer-Encoding"); te != "" {
			w.chunked = strings.EqualFold(te, "chunked") && !w.http10
			if !w.chunked {
				w.closeAfter = true // a framing of the handler's own: the close ends it
			}
		} else if final && (!w.head || w.written > 0) {
			setLength = int64(len(w.buf))
		} else if w.head {
			// nothing: a HEAD answer has no body to frame
		} else if w.http10 {
			w.closeAfter = true // HTTP/1.0 without a length: the close ends the body
		} else {
			w.chunked = true
		}
	}

	b := appendStatusLine(w.c.lineBuf[:0], w.status)
	b = w.appendHeaderMap(b)
	if _, ok := h["Date"]; !ok {
		b = append(b, "Date: "...)
		b = append(b, httpDate()...)
		b = append(b, "\r\n"...)
	}
	if _, ok := h["Content-Type"]; !ok && allowed && len(w.buf) > 0 && headerGet(h, "Content-Encoding") == "" {
		b = append(b, "Content-Type: "...)
		b = append(b, http.DetectContentType(w.buf)...)
		b = append(b, "\r\n"...)
	}
	if setLength >= 0 {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, setLength, 10)
		b = append(b, "\r\n"...)
	}
	if w.chunked && headerGet(h, "Transfer-Encoding") == "" {
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	}
	if w.closeAfter {
		if !hasToken(headerGet(h, "Connection"), "close") {
			b = append(b, "Connection: close\r\n"...)
		}
	} else if w.http10 {
		b = append(b, "Connection: keep-alive\r\n"...)
	}
	b = append(b, "\r\n"...)
	w.c.lineBuf = b
	w.writeRaw(b)
	if len(w.buf) > 0 && !w.head && allowed {
		if w.chunked {
			w.c.lineBuf = append(strconv.AppendInt(w.c.lineBuf[:0], int64(len(w.buf)), 16), "\r\n"...)
			w.writeRaw(w.c.lineBuf)
			w.writeRaw(w.buf)
			w.writeRawString("\r\n")
		} else {
			w.writeRaw(w.buf)
		}
	}
	w.buf = w.buf[:0]
}

// appendHeaderMap appends the handler's headers, keys sorted as net/http writes them, values
// with CR and LF turned to spaces, invalid names dropped.
func (w *response) appendHeaderMap(b []byte) []byte {
	keys := w.c.keysBuf[:0]
	for k := range w.hdr {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !validMethod(k) || strings.HasPrefix(k, http.TrailerPrefix) {
			continue // trailers are not sent (the gateway sets none)
		}
		for _, v := range w.hdr[k] {
			b = append(b, k...)
			b = append(b, ": "...)
			start := len(b)
			b = append(b, strings.TrimSpace(v)...)
			for i := start; i < len(b); i++ {
				if b[i] == '\r' || b[i] == '\n' {
					b[i] = ' '
				}
			}
			b = append(b, "\r\n"...)
		}
	}
	clear(keys)
	w.c.keysBuf = keys[:0]
	return b
}

func headerGet(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func appendStatusLine(b []byte, code int) []byte {
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, ' ')
	if text := http.StatusText(code); text != "" {
		b = append(b, text...)
	} else {
		b = append(b, "status code "...)
		b = strconv.AppendInt(b, int64(code), 10)
	}
	return append(b, "\r\n"...)
}

// finish completes the answer after the handler returned.
func (w *response) finish() {
	if !w.wroteHeader {
		w.setStatus(http.StatusOK)
	}
	if !w.committed {
		w.commit(true)
	}
	if w.chunked && !w.head {
		w.writeRawString("0\r\n\r\n")
	}
	if w.contentLength != -1 && w.written != w.contentLength && !w.head && bodyAllowed(w.status) {
		w.closeAfter = true // the client would wait for the missing bytes
	}
	w.flushRaw()
	if !w.c.body.eof && w.c.tmpl.Body != http.NoBody {
		w.closeAfter = true // committed before the handler finished reading, and never read
	}
}

// Flush sends the head and what is buffered (http.Flusher).
func (w *response) Flush() { _ = w.FlushError() }

// FlushError is what http.ResponseController.Flush calls.
func (w *response) FlushError() error {
	if w.hijacked {
		return http.ErrHijacked
	}
	if w.handlerDone {
		return errAfterHandler
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(false)
	}
	w.flushRaw()
	return w.werr
}

// SetReadDeadline and SetWriteDeadline serve http.ResponseController.
func (w *response) SetReadDeadline(t time.Time) error { return w.c.nc.SetReadDeadline(t) }

func (w *response) SetWriteDeadline(t time.Time) error {
	w.c.deadline = true
	return w.c.nc.SetWriteDeadline(t)
}

// EnableFullDuplex keeps the request body readable after the answer's head is written
// (otherwise its rest is read away then, as net/http does).
func (w *response) EnableFullDuplex() error {
	w.fullDuplex = true
	return nil
}

// Hijack hands the connection to the handler (the realtime WebSocket upgrade); a status
// already set (101) is written first, as net/http does.
func (w *response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked {
		return nil, nil, http.ErrHijacked
	}
	if w.handlerDone {
		return nil, nil, errAfterHandler
	}
	c := w.c
	c.abortBackgroundRead()
	if w.wroteHeader && !w.committed {
		w.commit(false)
		w.flushRaw()
	}
	w.hijacked = true
	c.setState(stateHijacked)
	c.srv.trackConn(c, false)
	_ = c.nc.SetDeadline(time.Time{})
	return c.nc, bufio.NewReadWriter(c.br, c.writer()), nil
}

// dateCache is the Date header, formatted once a second.
var dateCache atomic.Pointer[dateEntry]

type dateEntry struct {
	// until is the monotonic clock (clock.Mono) at the end of the wall clock's second that
	// text names: before it the entry is current, read with one monotonic reading instead of
	// time.Now's two clocks per response. A step of the wall clock shows from the next
	// second on, as it would in a header of second resolution a moment later.
	until int64
	text  string
}

func httpDate() string {
	if d := dateCache.Load(); d != nil && clock.Mono() < d.until {
		return d.text
	}
	// The monotonic reading first: the second's end it sets is then never late.
	m, now := clock.Mono(), time.Now()
	d := &dateEntry{until: m + int64(time.Second) - int64(now.Nanosecond()), text: now.UTC().Format(http.TimeFormat)}
	dateCache.Store(d)
	return d.text
}
