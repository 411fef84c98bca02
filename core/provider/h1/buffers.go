package h1

import (
	"bufio"
	"sync"
)

// Read buffers, recycled between exchanges. An exchange starts with a first-read buffer,
// large enough for the head and the whole of a short answer arriving at once (a stream of a
// few KiB from a fast upstream: one system call instead of two, and no flush of the client's
// output between them, provider's timedBody); once its bytes have been read, the exchange
// goes on with a small one (drained), which is what a stream waiting for its upstream holds.
const (
	firstReadSize = 8 << 10
	readSize      = 4 << 10
)

var (
	firstReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, firstReadSize) }}
	readers      = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readSize) }}
)

// reader gives the connection a read buffer for an exchange.
func (c *conn) reader() {
	if c.br == nil {
		c.br = firstReaders.Get().(*bufio.Reader)
		c.br.Reset(c.nc)
		c.fast = false
	}
}

// waitHook, set by tests, sees a connection start a wait with no buffer (awaitBytes).
var waitHook func(*conn)

// awaitBytes waits for the answer's next bytes with no read buffer, when nothing is
// buffered: a paced stream waits for its upstream between events for most of its life, and
// held 4 KiB all that time. The buffer goes back to the pool for the wait and a small one
// comes for the bytes (a pool's round trip, beside the park and wake-up of every read that
// waits). Its peek stands for the read that would have found nothing; once it finds bytes
// there already (a fast upstream, a busy replica), it would be a system call more per read,
// and the exchange reads as before. Not over TLS: decrypted bytes may wait in it unseen.
func (c *conn) awaitBytes() {
	if c.fast || c.tls != nil || !c.peeker.waitable(c.raw) {
		return
	}
	c.releaseReader()
	if waitHook != nil {
		waitHook(c)
	}
	c.fast = !c.peeker.wait()
	c.br = readers.Get().(*bufio.Reader)
	c.br.Reset(c.nc)
}

// drained swaps an emptied first-read buffer for a small one: the memory a waiting stream
// holds stays what it was before first reads grew. Nothing buffered is lost.
func (c *conn) drained() {
	if c.br.Size() == firstReadSize && c.br.Buffered() == 0 {
		small := readers.Get().(*bufio.Reader)
		small.Reset(c.nc)
		c.br.Reset(nil)
		firstReaders.Put(c.br)
		c.br = small
	}
}

// releaseReader gives the read buffer back; only with nothing buffered, before the
// connection is pooled (another exchange may take it from there at once).
func (c *conn) releaseReader() {
	if c.br != nil {
		c.br.Reset(nil)
		if c.br.Size() == firstReadSize {
			firstReaders.Put(c.br)
		} else {
			readers.Put(c.br)
		}
		c.br = nil
	}
}
