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
)

// Event is one dispatched event. Name is empty for unnamed ("message") events.
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
// joined by "\n", comments ignored, events without data not dispatched.
type Reader struct {
	br      *bufio.Reader
	pending bool // the previous line ended with CR; a following LF belongs to it
}

// NewReader reads events from r.
func NewReader(r io.Reader) *Reader { return &Reader{br: bufio.NewReaderSize(r, 16<<10)} }

// Next returns the next event, io.EOF after the last complete one. An event cut off by the end
// of the stream is not returned: a truncated stream must not look complete.
func (r *Reader) Next() (Event, error) {
	var ev Event
	var data []byte
	hasData := false
	for {
		line, err := r.line()
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) == 0 {
				return Event{}, io.EOF
			}
			if !errors.Is(err, io.EOF) {
				return Event{}, err
			}
			// A final line without its terminator is incomplete; drop it with the event.
			return Event{}, io.EOF
		}
		if len(line) == 0 {
			if hasData {
				ev.Data = data
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
			ev.Name = string(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		case "id":
			ev.ID = string(value)
		}
	}
}

// line reads one line without its terminator; err is io.EOF when the stream ended before a
// terminator (line may then hold a partial line).
func (r *Reader) line() ([]byte, error) {
	var buf []byte
	for {
		b, err := r.br.ReadByte()
		if err != nil {
			return buf, err
		}
		if r.pending {
			r.pending = false
			if b == '\n' {
				continue
			}
		}
		switch b {
		case '\n':
			return buf, nil
		case '\r':
			r.pending = true
			return buf, nil
		}
		if len(buf) >= MaxLine {
			return nil, ErrLineTooLong
		}
		buf = append(buf, b)
	}
}

// Writer writes events to a client and flushes after each one: a buffered event is a stalled
// stream from the client's point of view.
type Writer struct {
	w  io.Writer
	rc *http.ResponseController
}

// NewWriter sets the streaming headers on w; call it before the first write.
func NewWriter(w http.ResponseWriter) *Writer {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // tell buffering reverse proxies in front of us not to
	h.Del("Content-Length")
	return &Writer{w: w, rc: http.NewResponseController(w)}
}

// Event writes one event; name may be empty. Data with newlines becomes several data lines.
func (w *Writer) Event(name string, data []byte) error {
	var b bytes.Buffer
	b.Grow(len(data) + len(name) + 16)
	if name != "" {
		b.WriteString("event: ")
		b.WriteString(name)
		b.WriteByte('\n')
	}
	for {
		line, rest, more := bytes.Cut(data, []byte("\n"))
		b.WriteString("data: ")
		b.Write(bytes.TrimSuffix(line, []byte("\r")))
		b.WriteByte('\n')
		if !more {
			break
		}
		data = rest
	}
	b.WriteByte('\n')
	if _, err := w.w.Write(b.Bytes()); err != nil {
		return err
	}
	return w.rc.Flush()
}
