package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

type connState int

const (
	stateNew connState = iota
	stateActive
	stateIdle
	stateHijacked
)

// errClientGone is the request context's cause when the background read saw the client leave.
var errClientGone = errors.New("h1: client closed the connection")

// aLongTimeAgo is the deadline that makes a pending read return at once.
var aLongTimeAgo = time.Unix(1, 0)

// conn is one client connection and everything it reuses from request to request.
type conn struct {
	srv        *Server
	nc         net.Conn
	remoteAddr string
	br         *bufio.Reader
	// bw is taken from bwPool by the first write and given back by every flush that empties
	// it (writer, releaseWriter): a stream waits for its upstream between flushes for most
	// of its life, and an idle keep-alive connection has nothing to write.
	bw *bufio.Writer
	// out is bw's writer: the connection, or, for the moment a larger buffer takes over
	// what bw holds (room), that buffer.
	out     connOut
	baseCtx context.Context

	stateMu sync.Mutex
	state   connState
	// stateSince is when the connection was accepted: only a new connection's age is read
	// (closeIdleConns), so a change of state reads no clock.
	stateSince time.Time

	head     []byte // the request head as read, reused
	reqHdr   http.Header
	tmpl     http.Request
	url      url.URL
	body     body
	w        response
	hdrVals  []string // backing store of the request header values
	keysBuf  []string // response header keys, sorted
	lineBuf  []byte   // response head being written
	deadline bool     // a handler set a write deadline: clear it after the request

	// The background read that notices a client leaving while its request is served.
	bgDone    chan error
	bgRunning bool
	ctx       *reqCtx // the request's context (the last one's between requests)
	abort     atomic.Bool
	// bgRead is backgroundRead as a func value, made once per connection: a goroutine of a
	// closure cost an allocation per request. bgCancel is the context of the request
	// the read runs for; it does not change while the read runs (the next request's waits
	// for bgDone first).
	bgRead   func()
	bgCancel *reqCtx
	// bgWait lets the background read wait with no read buffer (br is nil meanwhile) and
	// take one when the next bytes come: a stream's request is read, and its connection
	// needs no buffer until the next request.
	bgWait waiter
}

var (
	brPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}
	bwPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, writeBufferSize) }}
)

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{srv: s, nc: nc, stateSince: time.Now(), bgDone: make(chan error, 1)}
	c.remoteAddr = nc.RemoteAddr().String()
	c.baseCtx = context.WithValue(context.Background(), http.LocalAddrContextKey, nc.LocalAddr())
	c.reqHdr = make(http.Header, 16)
	c.w.hdr = make(http.Header, 8)
	c.w.c = c
	c.body.c = c
	c.bgRead = c.backgroundRead
	return c
}

func (c *conn) setState(st connState) {
	c.stateMu.Lock()
	c.state = st
	c.stateMu.Unlock()
}

func (c *conn) getState() (connState, time.Time) {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	return c.state, c.stateSince
}

// serve runs the connection's requests one after the other.
func (c *conn) serve() {
	c.reader()
	keep := false // the connection left this goroutine (hijacked or handed over)
	defer func() {
		if !keep {
			_ = c.nc.Close()
			if c.bgRunning {
				<-c.bgDone // the close ends it; then br is free
				c.bgRunning = false
			}
			c.srv.trackConn(c, false)
			c.releaseReader()
			c.releaseWriter()
		}
	}()
	first := true
	for {
		if !first {
			// Between requests: wait for the next one's first byte under IdleTimeout,
			// unless it is buffered already or the background read is waiting for it.
			if !c.awaitNext() {
				return
			}
		}
		c.setState(stateActive)
		// The idle deadline (if any) gives way to the header deadline, which a head that
		// is buffered whole already does not need; the body's reads have none.
		dl := !first && c.srv.IdleTimeout > 0
		if d := c.srv.ReadHeaderTimeout; d > 0 && !(c.br.Buffered() > 0 && bytes.Contains(peekAll(c.br), crlfcrlf)) {
			_ = c.nc.SetReadDeadline(time.Now().Add(d))
			dl = true
		}
		first = false
		ok, handOver := c.readHead()
		if handOver {
			keep = c.handOver()
			return
		}
		if !ok {
			return
		}
		if dl {
			_ = c.nc.SetReadDeadline(time.Time{})
		}
		req, ok := c.parse()
		if !ok {
			keep = c.handOver()
			return
		}
		if !c.serveOne(req) {
			keep = c.w.hijacked
			return
		}
		// A rare large head or answer head does not stay with the connection for its life.
		if cap(c.head) > 64<<10 {
			c.head = nil
		}
		if cap(c.lineBuf) > 64<<10 {
			c.lineBuf = nil
		}
		if cap(c.hdrVals) > 1024 {
			c.hdrVals = nil
		}
		if c.srv.inShutdown.Load() {
			return
		}
	}
}

var crlfcrlf = []byte("\r\n\r\n")

func peekAll(br *bufio.Reader) []byte {
	b, _ := br.Peek(br.Buffered())
	return b
}

// awaitNext waits for the next request's first byte; false: the connection is done.
func (c *conn) awaitNext() bool {
	c.setState(stateIdle)
	if c.srv.inShutdown.Load() {
		return false
	}
	if c.bgRunning {
		// The background read is that wait already: bound it by the idle timeout.
		if d := c.srv.IdleTimeout; d > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(d))
		}
		err := <-c.bgDone
		c.bgRunning = false
		if err != nil {
			return false
		}
	} else if c.br.Buffered() < 4 {
		if d := c.srv.IdleTimeout; d > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(d))
		}
	}
	// As net/http, the next request begins with 4 bytes under the idle timeout; fewer
	// before the client's end close the connection without an answer.
	if c.br.Buffered() < 4 {
		if _, err := c.br.Peek(4); err != nil {
			return false
		}
	}
	return true
}

// readHead reads the request line and headers into c.head. handOver: the head is over the
// limit, or ends abnormally in a way net/http answers (it gets the connection).
func (c *conn) readHead() (ok, handOver bool) {
	c.head = c.head[:0]
	limit := c.srv.maxHeaderBytes() + 4096
	for {
		line, err := c.br.ReadSlice('\n')
		c.head = append(c.head, line...)
		if len(c.head) > limit {
			return false, true
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			// A timeout, or EOF before any byte: net/http closes silently too. A partial
			// head that ends is its 400: hand it over.
			return false, len(c.head) > 0 && !isTimeout(err)
		}
		if len(line) <= 2 && (len(line) == 1 || line[0] == '\r') {
			// The blank line ends the head (a blank first line is net/http's 400: parse
			// hands it over).
			return true, false
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// handOver gives the connection, with what was read of it, to the net/http fallback.
func (c *conn) handOver() bool {
	if c.srv.inShutdown.Load() {
		return false
	}
	pending := append([]byte(nil), c.head...)
	if n := c.br.Buffered(); n > 0 {
		b, _ := c.br.Peek(n)
		pending = append(pending, b...)
	}
	_ = c.nc.SetReadDeadline(time.Time{})
	ln := c.srv.fallback()
	c.srv.trackConn(c, false)
	if !ln.hand(&replayConn{Conn: c.nc, pending: pending}) {
		return false
	}
	c.releaseReader()
	c.releaseWriter()
	return true
}

// writer returns the connection's write buffer, taking one from the pool if it has none.
func (c *conn) writer() *bufio.Writer {
	if c.bw == nil {
		c.bw = bwPool.Get().(*bufio.Writer)
		c.out.nc = c.nc
		c.bw.Reset(&c.out)
	}
	return c.bw
}

// releaseWriter gives the write buffer back; what it still holds is dropped (a failed
// write's bytes: the connection closes).
func (c *conn) releaseWriter() {
	if c.bw != nil {
		putWriter(c.bw)
		c.bw = nil
	}
}

// putWriter gives a write buffer back to its pool.
func putWriter(bw *bufio.Writer) {
	bw.Reset(nil)
	if bw.Size() == writeBufferSize {
		bwPool.Put(bw)
	} else if i := largeWriterClass(bw.Size()); i < len(largeWriters) && largeWriterSize(i) == bw.Size() {
		largeWriters[i].Put(bw)
	}
}

// connOut is what the write buffer writes to: the connection, or the buffer that takes
// over from it (into).
type connOut struct {
	nc   net.Conn
	into *bufio.Writer
}

func (o *connOut) Write(p []byte) (int, error) {
	if o.into != nil {
		return o.into.Write(p)
	}
	return o.nc.Write(p)
}

// writeBufferSize is the pooled write buffer's size; largeWriters hold the larger ones a
// write may need (room), of 8, 16, 32 and 64 KiB.
const (
	writeBufferSize = 4 << 10
	largeWriterMin  = 8 << 10
)

var largeWriters [4]sync.Pool

func largeWriterSize(class int) int { return largeWriterMin << class }

// largeWriterClass is the class of the smallest large buffer that holds n bytes
// (len(largeWriters) when none does).
func largeWriterClass(n int) int {
	i := 0
	for i < len(largeWriters) && largeWriterSize(i) < n {
		i++
	}
	return i
}

// room makes the write buffer hold n more bytes without sending what it holds first: a
// write larger than its room (a stream's arrival of events coalesced into one write, a whole
// answer after its head) made bufio send a full buffer and then the rest, two system calls
// (and two packets) where the flush that follows sends it all in one. What the buffer holds
// moves into a larger one from the pool (a copy: bw's flush writes into it), up to 64 KiB
// in all; a write beyond that goes as bufio sends it. The larger buffer goes back to its
// pool at the flush that empties it, as the small one does.
func (c *conn) room(n int) {
	bw := c.writer()
	if n <= bw.Available() || bw.Buffered() == 0 {
		return // it fits, or bufio sends a large write straight from the caller's bytes
	}
	class := largeWriterClass(bw.Buffered() + n)
	if class == len(largeWriters) {
		return
	}
	large, _ := largeWriters[class].Get().(*bufio.Writer)
	if large == nil {
		large = bufio.NewWriterSize(nil, largeWriterSize(class))
	}
	large.Reset(&c.out)
	c.out.into = large
	err := bw.Flush() // into large, which has room for it: no system call
	c.out.into = nil
	if err != nil { // cannot happen: large has room, and its writes do not fail
		putWriter(large)
		return
	}
	c.bw = large
	putWriter(bw)
}

// serveOne runs the handler for one request and finishes its answer; false: the connection
// closes (or was hijacked).
func (c *conn) serveOne(p parsed) bool {
	// The context and the request in one allocation: WithContext's copy, inlined and not
	// kept, stays on the stack.
	ctx := &reqCtx{parent: c.baseCtx}
	c.ctx = ctx
	ctx.req = *c.tmpl.WithContext(ctx)
	req := &ctx.req
	c.w.reset(p, req.Method == http.MethodHead)
	if c.tmpl.Body == http.NoBody {
		c.startBackgroundRead()
	}
	panicked := c.runHandler(req)
	c.w.handlerDone = true
	if c.w.hijacked {
		ctx.cancel(context.Canceled)
		return false
	}
	if panicked {
		ctx.cancel(context.Canceled)
		c.abortBackgroundRead()
		return false
	}
	// Cancelled before the answer is finished, as net/http does: a client that has read the
	// answer never sees the request's context still alive.
	ctx.cancel(context.Canceled)
	c.w.finish()
	// The answer's and the request's header maps are the connection's, emptied by the next
	// request; emptied now, so that a keep-alive connection keeps nothing of the request it
	// served while it waits for the next: a value the handler set may live in a request's
	// allocation (relay.SetRequestID's, in the request's state), which a header map held
	// alive, with all it points to, for as long as the connection stayed idle.
	clear(c.w.hdr)
	clear(c.reqHdr)
	if c.deadline {
		_ = c.nc.SetWriteDeadline(time.Time{})
		c.deadline = false
	}
	if c.w.closeAfter || c.w.werr != nil {
		if c.body.unread() {
			// Closing with a request body unread: half-close and give the client a moment
			// to read the answer before a reset could discard it, as net/http does.
			c.abortBackgroundRead()
			if tc, ok := c.nc.(interface{ CloseWrite() error }); ok {
				_ = tc.CloseWrite()
			}
			time.Sleep(500 * time.Millisecond)
		}
		return false
	}
	return true
}

func (c *conn) runHandler(req *http.Request) (panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			panicked = true
			if v != http.ErrAbortHandler {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				c.srv.logf("h1: panic serving %v: %v\n%s", c.remoteAddr, v, buf)
			}
		}
	}()
	c.srv.Handler.ServeHTTP(&c.w, req)
	return false
}

// reader gives the connection a read buffer if it has none (the background read gave it
// back while it waited, or had none).
func (c *conn) reader() {
	if c.br == nil {
		c.br = brPool.Get().(*bufio.Reader)
		c.br.Reset(c.nc)
	}
}

// releaseReader gives the read buffer back to the pool.
func (c *conn) releaseReader() {
	if c.br != nil {
		c.br.Reset(nil)
		brPool.Put(c.br)
		c.br = nil
	}
}
