package simulator

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// streamer writes one SSE response and applies the pacing and the stream directives. Protocol
// code calls step before every content chunk and end before the terminal events; when either
// returns false the stream is over and the caller returns.
type streamer struct {
	x        *exchange
	a        *answer
	rc       *http.ResponseController
	sep      string // event terminator: "\n\n", or "\r\n\r\n" like Google
	total    int    // content chunks planned
	n        int    // content chunks started
	stalled  bool
	done     bool
	array    bool            // a JSON array written element by element instead of SSE
	elems    int             // array elements written
	midError func(*streamer) // writes the protocol's mid-stream error event
}

// startStream writes the 200 event-stream headers for a reply of total content chunks.
func (x *exchange) startStream(a *answer, total int, sep string, midError func(*streamer)) *streamer {
	h := x.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	s := x.start(a, total, midError)
	s.sep = sep
	return s
}

// startArray writes the 200 headers of Gemini's streamGenerateContent without alt=sse: one
// JSON array whose pretty-printed elements are written as they are produced.
func (x *exchange) startArray(a *answer, total int, midError func(*streamer)) *streamer {
	x.w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	s := x.start(a, total, midError)
	s.array = true
	return s
}

// startBody writes the 200 headers of a binary body sent in total chunks with write. A binary
// body has no error event, so #sim:error-mid drops the connection instead.
func (x *exchange) startBody(a *answer, total int, contentType string) *streamer {
	x.w.Header().Set("Content-Type", contentType)
	return x.start(a, total, func(*streamer) { cutConnection(x.w, false) })
}

// start writes the status line and the headers set so far, and flushes them.
func (x *exchange) start(a *answer, total int, midError func(*streamer)) *streamer {
	x.w.WriteHeader(http.StatusOK)
	s := &streamer{x: x, a: a, rc: http.NewResponseController(x.w), total: total, midError: midError}
	if err := s.rc.Flush(); err != nil {
		s.done = true
	}
	return s
}

// event writes one event: an event: line when name is set, one data: line, the terminator.
// In array mode it writes the next array element instead.
func (s *streamer) event(name string, data []byte) {
	if s.done {
		return
	}
	if s.array {
		s.element(data)
		return
	}
	buf := make([]byte, 0, len(name)+len(data)+16)
	if name != "" {
		buf = append(buf, "event: "...)
		buf = append(buf, name...)
		buf = append(buf, '\n')
	}
	buf = append(buf, "data: "...)
	buf = append(buf, data...)
	buf = append(buf, s.sep...)
	s.write(buf)
}

// element writes one array element, separated like Google's "\n,\r\n".
func (s *streamer) element(data []byte) {
	var b bytes.Buffer
	if s.elems == 0 {
		b.WriteByte('[')
	} else {
		b.WriteString("\n,\r\n")
	}
	s.elems++
	if json.Indent(&b, data, "", "  ") != nil {
		b.Write(data)
	}
	s.write(b.Bytes())
}

func (s *streamer) write(b []byte) {
	if _, err := s.x.w.Write(b); err != nil {
		s.done = true
		return
	}
	if err := s.rc.Flush(); err != nil {
		s.done = true
	}
}

// close ends an array stream; SSE streams end by closing the body, so it does nothing there.
func (s *streamer) close() {
	if !s.array || s.done {
		return
	}
	if s.elems == 0 {
		s.write([]byte("["))
	}
	s.write([]byte("\n]"))
}

// json writes one event whose data is v.
func (s *streamer) json(name string, v any) { s.event(name, mustJSON(v)) }

// step paces the next content chunk: the chunk delay, then before the second chunk the stall
// and the mid-stream error, and the cut half way.
func (s *streamer) step() bool {
	if s.done {
		return false
	}
	if s.n > 0 && !s.x.sleep(s.x.sim.o.ChunkDelay) {
		s.done = true
		return false
	}
	if s.n == 1 && !s.second() {
		return false
	}
	if s.a.d.cut && s.n == max(1, s.total/2) {
		s.cut()
		return false
	}
	s.n++
	return !s.done
}

// second applies what happens before the second chunk: the stall, then the mid-stream error.
func (s *streamer) second() bool {
	if !s.stalled {
		s.stalled = true
		if !s.x.sleep(s.a.d.stall) {
			s.done = true
			return false
		}
	}
	if s.a.d.errorMid != "" {
		s.midError(s)
		s.close()
		s.done = true
		return false
	}
	return true
}

// end precedes the terminal events. A reply too short for step to have reached the stall, the
// mid-stream error or the cut applies them here, so every directive works on every reply.
func (s *streamer) end() bool {
	if s.done {
		return false
	}
	if s.n <= 1 && !s.second() {
		return false
	}
	if s.a.d.cut {
		s.cut()
		return false
	}
	return true
}

func (s *streamer) cut() {
	s.done = true
	cutConnection(s.x.w, s.a.d.cutEOF)
}
