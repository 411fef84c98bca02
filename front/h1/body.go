package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
)

// maxPostHandlerRead is how much of an unread request body is read away after the answer to
// keep the connection, as net/http does (256 KiB); a longer rest closes it.
const maxPostHandlerRead = 256 << 10

var (
	errBodyClosed = errors.New("http: invalid Read on closed Body")
	errTrailerEOF = errors.New("http: unexpected EOF reading trailer") // net/http's words
)

// body is the request body of the connection's current request.
type body struct {
	c       *conn
	remain  int64 // Content-Length framing: bytes left
	chunked bool
	cr      io.Reader // the chunked decoder
	expect  bool      // Expect: 100-continue and no 100 sent yet
	eof     bool
	closed  bool
	err     error
}

func (b *body) reset(contentLength int64, chunked, expect bool) {
	*b = body{c: b.c, remain: contentLength, chunked: chunked, expect: expect, eof: contentLength == 0}
	if chunked {
		b.cr = httputil.NewChunkedReader(b.c.br)
	}
}

// Ready reports whether the next Read returns without waiting for the client: the body has
// ended or failed, or (Content-Length framing, no 100 Continue owed) has bytes buffered. A
// reader that times the client's reads (front's pacedBody) need not arm a deadline then.
func (b *body) Ready() bool {
	switch {
	case b.closed || b.err != nil || b.eof:
		return true
	case b.expect || b.chunked:
		return false
	}
	return b.c.br.Buffered() > 0
}

// unread reports whether the body has bytes the handler did not read.
func (b *body) unread() bool { return !b.eof }

func (b *body) Read(p []byte) (int, error) {
	if b.closed {
		return 0, errBodyClosed
	}
	return b.read(p)
}

func (b *body) read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.eof {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	if b.expect {
		b.expect = false
		if w := &b.c.w; !w.wroteHeader && !w.hijacked {
			// The client waits for this before it sends the body.
			bw := b.c.writer()
			_, _ = bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
			if err := bw.Flush(); err != nil {
				return 0, b.fail(err)
			}
			b.c.releaseWriter() // not held while the body arrives, however slowly
		}
	}
	if b.chunked {
		n, err := b.cr.Read(p)
		if err == io.EOF {
			if terr := b.skipTrailer(); terr != nil {
				return n, b.fail(terr)
			}
			b.hitEOF()
			return n, io.EOF
		}
		if err != nil {
			return n, b.fail(err)
		}
		return n, nil
	}
	if int64(len(p)) > b.remain {
		p = p[:b.remain]
	}
	n, err := b.c.br.Read(p)
	b.remain -= int64(n)
	if b.remain == 0 {
		b.hitEOF()
		return n, io.EOF
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return n, b.fail(err)
	}
	return n, nil
}

// fail keeps a read error and, as net/http's connection reader does, cancels the request's
// context: the connection is unusable.
func (b *body) fail(err error) error {
	b.err = err
	if b.c.ctx != nil {
		b.c.ctx.cancel(errClientGone)
	}
	if err != io.ErrUnexpectedEOF && err != io.EOF {
		// Another failure (a deadline) leaves bytes of the body behind: the answer says
		// Connection: close. After the client's end the connection closes anyway, and
		// net/http's answer does not say so.
		b.c.w.closeAfter = true
	}
	return err
}

// skipTrailer reads the chunked body's trailer section up to its blank line (trailers are
// not passed on). Its first checks are net/http's (transfer.go readTrailer), so that both
// servers refuse the same trailers with the same words: the common empty trailer, an end
// before two bytes, and a trailer whose terminating blank line is not already within the
// read buffer.
func (b *body) skipTrailer() error {
	buf, err := b.c.br.Peek(2)
	if len(buf) == 2 && buf[0] == '\r' && buf[1] == '\n' {
		_, _ = b.c.br.Discard(2)
		return nil
	}
	if len(buf) < 2 {
		return errTrailerEOF
	}
	if err != nil {
		return err
	}
	if !upcomingDoubleCRLF(b.c.br) {
		return errors.New("http: suspiciously long trailer after chunked body")
	}
	for n := 0; ; {
		line, err := b.c.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			err = errors.New("h1: chunked trailer line too long")
		}
		if err == io.EOF {
			err = errTrailerEOF
		}
		if err != nil {
			return err
		}
		if n += len(line); n > 64<<10 {
			return errors.New("h1: chunked trailer too long")
		}
		if len(line) == 1 || len(line) == 2 && line[0] == '\r' {
			return nil
		}
	}
}

// upcomingDoubleCRLF reports whether the buffered bytes, read up to the buffer's size, hold
// the blank line that ends a trailer (net/http's seeUpcomingDoubleCRLF).
func upcomingDoubleCRLF(r *bufio.Reader) bool {
	for size := 4; ; size++ {
		buf, err := r.Peek(size)
		if bytes.HasSuffix(buf, []byte("\r\n\r\n")) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// hitEOF: the body is read; the connection's background read can start.
func (b *body) hitEOF() {
	b.eof = true
	b.c.startBackgroundRead()
}

func (b *body) Close() error {
	b.closed = true
	return nil
}

// discardRest reads away up to maxPostHandlerRead bytes of an unread body; false: the rest
// is longer, was never asked for (Expect: 100-continue), or failed - close the connection.
func (b *body) discardRest() bool {
	if b.eof {
		return true
	}
	if b.err != nil {
		// The client's end inside a Content-Length body: net/http's answer keeps quiet
		// about the close that follows (inside a chunked one it says Connection: close).
		return b.err == io.ErrUnexpectedEOF && !b.chunked
	}
	if b.expect {
		return false
	}
	if !b.chunked && b.remain > maxPostHandlerRead {
		return false
	}
	var buf [4096]byte
	for n := 0; n <= maxPostHandlerRead; {
		m, err := b.read(buf[:])
		n += m
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
	}
	return false
}

var _ io.ReadCloser = (*body)(nil)
var _ = http.NoBody
