// Package sse reads and writes server-sent events. The reader is what provider adapters use on
// upstream streams; the writer is what the front uses toward clients. Both are leaves (stdlib
// only) so that core and front can share them without importing each other.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"sync"
)

// Event is one dispatched event. Name is empty for unnamed ("message") events. Data may be
// kept after the next event is read: the reader never writes it again (unless it borrows:
// Reader.Borrow).
type Event struct {
	Name string
	Data []byte
	ID   string
}

// MaxLine bounds one line of an upstream stream, so a misbehaving upstream cannot make us
// buffer without limit.
const MaxLine = 32 << 20

// ErrLineTooLong is returned when a line exceeds MaxLine.
var ErrLineTooLong = errors.New("sse: line too long")

// Reader parses the text/event-stream format: LF, CRLF or CR line ends, several data lines
// joined by "\n", comments ignored, events without data not dispatched. Lines are found with
// bufio's ReadSlice, not byte by byte: this is on the per-chunk path of every stream. A lone
// CR ends a line too, but is only seen once the LF-terminated run containing it has arrived
// (no provider sends CR-only streams).
type Reader struct {
	br     *bufio.Reader
	queue  [][]byte // complete lines split off a run at lone CRs
	long   []byte   // a line longer than the bufio buffer, being assembled
	names  [8]string
	nNames int
	// arena holds the data of the events dispatched so far and, from start on, of the one
	// being read: one allocation serves many events. Dispatched data is never written again
	// (a full arena is replaced, not reused), so an event's Data may be kept.
	arena []byte
	start int
	// borrow: an event's Data may point into the read buffer, valid only until the next
	// Next (Borrow).
	borrow bool
	last   uint8 // the index in names of the last name returned, looked at first
	// lent holds a borrowing reader's arena while it has one from borrowArenas (nil: none).
	lent *[]byte
}

// Borrow lets Next return an event's data in the read buffer itself where it lies there
// whole (the usual shape, see buffered) instead of a copy in the arena: valid only until the
// next call of Next. For a reader whose every event is consumed before the next is read (a
// translated stream's decoder copies what it keeps): no arena block per stream, no copy per
// event. Call it after Reset; Reset ends it.
func (r *Reader) Borrow() { r.borrow = true }

// arenaSize is the size of an event data block: a few dozen events of a typical stream.
// A borrowing reader's one block starts at borrowArenaSize: it holds one event at a time.
const (
	arenaSize       = 4 << 10
	borrowArenaSize = 512
)

// borrowArenas recycles a borrowing reader's one arena block, as buffers do its read buffer:
// a stream longer than the read buffer has an event split between two reads, which the block
// assembles, and a 5 KiB chat answer made a block for that one event. A block goes back at
// Release, as the read buffer does (the events lent from either are used up by then), unless
// an event grew it past borrowArenaKept.
var borrowArenas = sync.Pool{New: func() any { b := make([]byte, 0, borrowArenaSize); return &b }}

const borrowArenaKept = 16 << 10

// buffers recycles the read buffers: one per stream would otherwise be allocated and cleared
// for every request. 4 KiB holds several events of any provider (a delta is a few hundred
// bytes; a longer line is assembled in long): a stream holds its buffer while it waits for
// the upstream, and 16 KiB made it the largest part of a stream's live heap (1 of 4.3 MB at
// 64 streams, twice that in RSS once the GC's headroom is counted).
var buffers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufferSize) }}

const readBufferSize = 4 << 10

// NewReader reads events from r. Release gives its buffer back.
func NewReader(r io.Reader) *Reader {
	rd := new(Reader)
	rd.Reset(r)
	return rd
}

// Reset makes r a new reader of src, as NewReader(src) is, in memory its caller holds: a
// stream that embeds its reader costs one allocation less. What r held is released first.
func (r *Reader) Reset(src io.Reader) {
	r.Release()
	br := buffers.Get().(*bufio.Reader)
	br.Reset(src)
	*r = Reader{br: br}
}

// Release returns the reader's buffer for another stream; the reader must not be used after.
func (r *Reader) Release() {
	if r.br != nil {
		r.br.Reset(nil)
		buffers.Put(r.br)
		r.br = nil
	}
	if r.lent != nil {
		if cap(r.arena) <= borrowArenaKept {
			*r.lent = r.arena[:0]
			borrowArenas.Put(r.lent)
		}
		r.lent, r.arena = nil, nil
	}
}

// knownNames are the event names of the protocols the gateway reads: a stream's names cost
// no allocation at all.
var knownNames = [...]string{
	"message_start", "content_block_start", "content_block_delta", "content_block_stop",
	"message_delta", "message_stop", "ping", "error",
	"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
	"response.output_text.delta", "response.output_text.done", "response.content_part.done",
	"response.output_item.done", "response.completed",
}

// name returns an event name as a string, the same one each time: a stream repeats a few
// names, which need not cost an allocation per event.
func (r *Reader) name(v []byte) string {
	// A stream's events come in runs of one name (its deltas): the last one first.
	if int(r.last) < r.nNames && string(v) == r.names[r.last] {
		return r.names[r.last]
	}
	for i, n := range r.names[:r.nNames] {
		if string(v) == n {
			r.last = uint8(i)
			return n
		}
	}
	n := ""
	for _, k := range knownNames {
		if string(v) == k {
			n = k
			break
		}
	}
	if n == "" {
		n = string(v)
	}
	if r.nNames < len(r.names) {
		r.names[r.nNames] = n
		r.last = uint8(r.nNames)
		r.nNames++
	}
	return n
}

// Next returns the next event, io.EOF after the last complete one. An event cut off by the end
// of the stream is not returned: a truncated stream must not look complete.
func (r *Reader) Next() (Event, error) {
	if r.br.Buffered() == 0 && len(r.queue) == 0 && r.long == nil {
		// The read the general loop would make, made first, so that an arrival's first
		// event (a paced stream's only one) is read by buffered too; an error with nothing
		// read ends the stream as the loop would end it.
		if _, err := r.br.Peek(1); err != nil {
			return Event{}, err
		}
	}
	if ev, ok := r.buffered(); ok {
		return ev, nil
	}
	if r.borrow {
		// The last event's data need not outlive this call: a borrowing reader has one
		// small block for the events the general loop assembles (those split between two
		// reads), used again for each.
		r.arena, r.start = r.arena[:0], 0
	}
	var ev Event
	hasData := false
	for {
		line, err := r.line()
		if err != nil {
			// A final line without its terminator is incomplete; drop it with the event.
			return Event{}, err
		}
		if len(line) == 0 {
			if hasData {
				end := len(r.arena)
				ev.Data = r.arena[r.start:end:end] // capped: an append cannot reach the next event
				return ev, nil
			}
			ev = Event{}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "event":
			ev.Name = r.name(value)
		case "data":
			if hasData {
				r.appendData([]byte{'\n'})
			} else {
				r.start = len(r.arena)
			}
			r.appendData(value)
			hasData = true
		case "id":
			ev.ID = string(value)
		}
	}
}

// buffered reads the next event in the usual shape — an optional "event:" line, one
// "data:" line, an empty line, LF ends only — when it is already whole in the read buffer:
// one look at the buffer instead of three ReadSlice calls and a field cut per line. Anything
// else (an event still arriving, comments, ids, several data lines, CRs) is left, unread, to
// Next's general loop, which reads it the same way.
func (r *Reader) buffered() (Event, bool) {
	if len(r.queue) > 0 || r.long != nil || r.br.Buffered() == 0 {
		return Event{}, false
	}
	buf, _ := r.br.Peek(r.br.Buffered())
	var ev Event
	// Lines by IndexByte itself: bytes.Cut's search and its three results cost as much as
	// the scans.
	eol := bytes.IndexByte(buf, '\n')
	if eol < 0 {
		return Event{}, false
	}
	line := buf[:eol]
	// The field names compared as constants, which the compiler does in a load or two; a
	// variable's bytes.CutPrefix is a call of memequal.
	if len(line) >= len("event:") && string(line[:len("event:")]) == "event:" {
		ev.Name = r.name(trimSpace(line[len("event:"):]))
		next := bytes.IndexByte(buf[eol+1:], '\n')
		if next < 0 {
			return Event{}, false
		}
		line, eol = buf[eol+1:eol+1+next], eol+1+next
	}
	if len(line) < len("data:") || string(line[:len("data:")]) != "data:" || eol+1 >= len(buf) || buf[eol+1] != '\n' {
		return Event{}, false
	}
	v := line[len("data:"):]
	n := eol + 2 // through the empty line
	if bytes.IndexByte(buf[:n], '\r') >= 0 {
		return Event{}, false
	}
	if r.borrow {
		// Discard leaves the bytes where they are until a later read refills the buffer.
		v = trimSpace(v)
		ev.Data = v[:len(v):len(v)]
		_, _ = r.br.Discard(n)
		return ev, true
	}
	r.start = len(r.arena)
	r.appendData(trimSpace(v))
	end := len(r.arena)
	ev.Data = r.arena[r.start:end:end] // capped, as Next's
	_, _ = r.br.Discard(n)
	return ev, true
}

// trimSpace drops the one space a field's value may start with.
func trimSpace(v []byte) []byte {
	if len(v) > 0 && v[0] == ' ' {
		return v[1:]
	}
	return v
}

// appendData adds b to the data of the event being read (arena[start:]), moving that to a
// new block when the arena is full.
func (r *Reader) appendData(b []byte) {
	if len(r.arena)+len(b) <= cap(r.arena) {
		r.arena = append(r.arena, b...)
		return
	}
	cur := r.arena[r.start:]
	size := arenaSize
	if r.borrow {
		size = borrowArenaSize
		if r.lent == nil && len(cur)+len(b) <= borrowArenaSize {
			// The first block of a borrowing reader: a recycled one (Release gives it back).
			r.lent = borrowArenas.Get().(*[]byte)
			r.arena, r.start = append(append((*r.lent)[:0], cur...), b...), 0
			return
		}
	}
	next := make([]byte, 0, max(size, 2*(len(cur)+len(b))))
	r.arena = append(append(next, cur...), b...)
	r.start = 0
}

// line returns the next complete line without its terminator; the slice is valid until the
// next call. At the end of the stream it returns io.EOF (a partial last line is dropped).
func (r *Reader) line() ([]byte, error) {
	if len(r.queue) > 0 {
		l := r.queue[0]
		r.queue = r.queue[1:]
		return l, nil
	}
	run, err := r.br.ReadSlice('\n')
	for errors.Is(err, bufio.ErrBufferFull) {
		r.long = append(r.long, run...)
		if len(r.long) > MaxLine {
			r.long = nil
			return nil, ErrLineTooLong
		}
		run, err = r.br.ReadSlice('\n')
	}
	if r.long != nil {
		run = append(r.long, run...)
		r.long = nil
	}
	complete := err == nil
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if complete {
		run = run[:len(run)-1]
		if n := len(run); n > 0 && run[n-1] == '\r' {
			run = run[:n-1]
		}
	}
	if bytes.IndexByte(run, '\r') < 0 {
		if !complete {
			return nil, io.EOF
		}
		return run, nil
	}
	// Lone CRs end lines as well; without a final LF the piece after the last CR is partial.
	pieces := bytes.Split(run, []byte{'\r'})
	if !complete {
		pieces = pieces[:len(pieces)-1]
		if len(pieces) == 0 {
			return nil, io.EOF
		}
		r.queue = append(r.queue, pieces[1:]...)
		return pieces[0], nil
	}
	r.queue = append(r.queue, pieces[1:]...)
	return pieces[0], nil
}

// Writer writes events to a client and flushes after each one: a buffered event is a stalled
// stream from the client's point of view. (A streamed answer's writer holds the flush until
// the gateway would wait for more, so that events available together share a write: see
// core/wire/lazyflush.)
type Writer struct {
	w   io.Writer
	rc  http.ResponseController // by value, as first, with the buffer: one allocation per stream
	buf []byte                  // reused for every event: the response writer copies what it is given
	// first is buf's room for a typical event from the start (a chat chunk is about 200
	// bytes); a larger event grows buf away from it.
	first [512]byte
}

// The streaming headers' values, as Header.Set stores them, shared by every stream: net/http
// only reads header values, and Set and Add never write into an existing slice.
var (
	valueEventStream = []string{"text/event-stream"}
	valueNoCache     = []string{"no-cache"}
	valueNo          = []string{"no"}
)

// NewWriter sets the streaming headers on w; call it before the first write.
func NewWriter(w http.ResponseWriter) *Writer {
	sw := new(Writer)
	sw.Init(w)
	return sw
}

// Init makes sw what NewWriter(w) returns, in memory the caller holds (an encoder that holds
// its writer: one allocation less per stream); sw must be new (zero) and stay where it is.
func (sw *Writer) Init(w http.ResponseWriter) {
	h := w.Header()
	h["Content-Type"] = valueEventStream
	h["Cache-Control"] = valueNoCache
	h["X-Accel-Buffering"] = valueNo // tell buffering reverse proxies in front of us not to
	delete(h, "Content-Length")
	sw.w, sw.rc = w, *http.NewResponseController(w)
	sw.buf = sw.first[:0]
}

// Event writes one event and flushes it; name may be empty. Data with newlines becomes several
// data lines.
func (w *Writer) Event(name string, data []byte) error {
	if err := w.Write(name, data); err != nil {
		return err
	}
	return w.rc.Flush()
}

// Flush sends what Write buffered.
func (w *Writer) Flush() error { return w.rc.Flush() }

// Data starts an unnamed event in the writer's own buffer: append the event's data to the
// returned slice and give it to Send. The data must be one line (no CR or LF), as compact JSON
// is: an encoder that renders its events into this buffer writes each event's bytes once,
// where Write would copy them and look for line ends.
func (w *Writer) Data() []byte { return append(w.buf[:0], "data: "...) }

// Send writes an event begun with Data, then flushes it when flush is set (else as Write).
func (w *Writer) Send(event []byte, flush bool) error {
	event = append(event, '\n', '\n')
	w.buf = event
	if _, err := w.w.Write(event); err != nil {
		return err
	}
	if flush {
		return w.rc.Flush()
	}
	return nil
}

// Write buffers one event without flushing it: for an event that is known to be followed at
// once by another (a stream's opening chunk, its closing ones), so that they share a packet
// and a system call.
func (w *Writer) Write(name string, data []byte) error {
	b := w.buf[:0]
	if name != "" {
		b = append(append(append(b, "event: "...), name...), '\n')
	}
	for {
		line, rest, more := bytes.Cut(data, []byte("\n"))
		b = append(append(append(b, "data: "...), bytes.TrimSuffix(line, []byte("\r"))...), '\n')
		if !more {
			break
		}
		data = rest
	}
	b = append(b, '\n')
	w.buf = b
	_, err := w.w.Write(b)
	return err
}
