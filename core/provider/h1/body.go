package h1

import (
	"bufio"
	"compress/gzip"
	"errors"
	"io"
	"sync/atomic"
)

var (
	errReadOnClosed = errors.New("h1: read on closed response body")
	errChunkLine    = errors.New("h1: malformed response: chunk size line too long")
)

// Body framings.
const (
	framedLength  = iota // Content-Length
	framedChunked        // Transfer-Encoding: chunked
	framedClose          // until the connection closes
)

// Body states.
const (
	bodyOpen   = iota
	bodyDone   // read to its end; the connection has been released
	bodyClosed // closed before its end; the connection has been closed
)

// body reads an answer straight from its connection's bufio.Reader. At its end the
// connection goes back to the pool; Close before the end closes the connection, since what
// is left of the answer would have to be read first.
type body struct {
	c       *conn
	release func() bool // stops the request's cancellation; false when it has fired
	framing int
	left    int64 // Content-Length: bytes left; chunked: bytes left in the current chunk
	inChunk bool  // chunked: the current chunk's data is followed by CR LF still unread
	state   atomic.Int32
	err     error // sticky, set by Read only
}

func (b *body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.state.Load() != bodyOpen {
		return 0, errReadOnClosed
	}
	if b.c.br.Buffered() == 0 && len(p) > 0 && (b.framing != framedLength || b.left > 0) {
		b.c.awaitBytes()
	}
	var n int
	var err error
	switch b.framing {
	case framedLength:
		n, err = b.readLength(p)
	case framedChunked:
		n, err = b.readChunked(p)
	default:
		n, err = b.c.br.Read(p)
	}
	if err == nil {
		b.c.drained()
	}
	if err != nil {
		if err == io.EOF {
			b.finish()
		} else {
			err = b.c.readError(err)
			b.fail()
		}
		b.err = err
	}
	return n, err
}

// Buffered is how many bytes Read returns without reading the connection, 0 when it may
// have to wait for it: a streamed answer's reader flushes its client's output only before
// a read that may wait (provider's timedBody). Read's goroutine only.
func (b *body) Buffered() int {
	if b.err != nil || b.state.Load() != bodyOpen {
		return 0
	}
	n := int64(b.c.br.Buffered())
	switch b.framing {
	case framedLength:
		return int(min(n, b.left))
	case framedChunked:
		return int(min(n, b.left)) // 0 between chunks: a chunk's size line may have to be read
	}
	return int(n)
}

func (b *body) readLength(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.c.br.Read(p)
	b.left -= int64(n)
	if b.left == 0 {
		// The end and the last bytes together: the connection is released at once.
		return n, io.EOF
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *body) readChunked(p []byte) (int, error) {
	br := b.c.br
	for b.left == 0 {
		if b.inChunk {
			if err := readCRLF(br); err != nil {
				return 0, err
			}
			b.inChunk = false
		}
		size, err := readChunkSize(br)
		if err != nil {
			return 0, err
		}
		if size == 0 {
			return 0, skipTrailers(br)
		}
		b.left, b.inChunk = size, true
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := br.Read(p)
	b.left -= int64(n)
	if err == io.EOF {
		return n, io.ErrUnexpectedEOF
	}
	if err != nil {
		return n, err
	}
	if b.left == 0 && br.Buffered() >= len(lastChunk) {
		// The usual end of an answer arrives with its last data: report the end with it, so
		// that the connection is released without another Read.
		if next, _ := br.Peek(len(lastChunk)); string(next) == lastChunk {
			_, _ = br.Discard(len(lastChunk))
			b.inChunk = false
			return n, io.EOF
		}
	}
	if b.left == 0 && br.Buffered() >= 2 {
		// The chunk's line end arrived with its data (a streamed event's chunk): taken now,
		// it leaves nothing buffered while the stream waits for its next chunk, so that Read
		// hands the first-read buffer back for a small one (drained). Left there, those two
		// bytes kept every waiting stream on its 8 KiB first-read buffer.
		if next, _ := br.Peek(2); string(next) == "\r\n" {
			_, _ = br.Discard(2)
			b.inChunk = false
		}
	}
	return n, nil
}

const lastChunk = "\r\n0\r\n\r\n"

func readCRLF(br *bufio.Reader) error {
	c, err := br.ReadByte()
	if err == nil && c == '\r' {
		c, err = br.ReadByte()
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if c != '\n' {
		return malformed("chunk end", []byte{c})
	}
	return nil
}

// readChunkSize reads "hex[;extension]" and its line end.
func readChunkSize(br *bufio.Reader) (int64, error) {
	var p parser
	budget := maxLine
	line, err := p.readLine(br, &budget, errChunkLine)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, err
	}
	for i, c := range line {
		if c == ';' {
			line = line[:i]
			break
		}
	}
	line = trimOWS(line)
	if len(line) == 0 || len(line) > 15 {
		return 0, malformed("chunk size", line)
	}
	var n int64
	for _, c := range line {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, malformed("chunk size", line)
		}
		n = n<<4 | int64(c)
	}
	return n, nil
}

// skipTrailers reads the trailer section to its empty line; trailers are ignored. It
// returns io.EOF at its end.
func skipTrailers(br *bufio.Reader) error {
	var p parser
	budget := MaxHeaderBytes
	for {
		line, err := p.readLine(br, &budget, errHeaderTooLarge)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if len(line) == 0 {
			return io.EOF
		}
	}
}

// finish releases the connection of a body read to its end.
func (b *body) finish() {
	if b.state.CompareAndSwap(bodyOpen, bodyDone) {
		b.c.release(b.release, b.framing != framedClose)
	}
}

// fail closes the connection of a body whose read failed.
func (b *body) fail() {
	if b.state.CompareAndSwap(bodyOpen, bodyClosed) {
		b.release()
		b.c.close()
	}
}

// Close may run while a Read waits (another goroutine gives up on the answer): closing the
// connection ends that Read.
func (b *body) Close() error {
	b.fail()
	return nil
}

// gzipBody decompresses an answer the transport asked in gzip, as net/http does; the
// decoder is made at the first Read.
type gzipBody struct {
	body io.ReadCloser
	zr   *gzip.Reader
	err  error
}

func (g *gzipBody) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.zr == nil {
		g.zr, g.err = gzip.NewReader(g.body)
		if g.err != nil {
			if g.err == io.EOF {
				g.err = io.ErrUnexpectedEOF
			}
			return 0, g.err
		}
	}
	n, err := g.zr.Read(p)
	if err != nil {
		g.err = err
	}
	return n, err
}

func (g *gzipBody) Close() error { return g.body.Close() }
