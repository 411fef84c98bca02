package simulator

import (
	"net/http"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// exchange is one request being answered.
type exchange struct {
	sim   *Simulator
	w     http.ResponseWriter
	r     *http.Request
	body  []byte
	form  *form // the parsed body of a multipart route, which has no body bytes
	proto protocol
}

// decode parses the body into v as the providers' parsers do, answering 400 with the
// protocol's error body on failure: member names match exactly (a case variant is an unknown
// member), and of two members of one name the last wins. The gateway must read every body
// the same way (its one-reading tests run against this).
func (x *exchange) decode(v any) bool {
	if err := json.Unmarshal(x.body, v, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)); err != nil {
		writeError(x.w, x.proto, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return false
	}
	return true
}

// conversation is a request body the simulator plans a text answer for.
type conversation interface{ convo() *convo }

// planned decodes the body into q, plans the answer to it and begins the exchange: the
// preamble every text route shares. It returns false when the exchange is already over (a
// bad body, a #sim:fail, or the client left).
func (x *exchange) planned(q conversation) (*answer, bool) {
	if !x.decode(q) {
		return nil, false
	}
	c := q.convo()
	a := plan(c, x.sim.o.Words)
	if x.sim.o.PrefixCache && a.d.cache == 0 {
		a.cached = min(x.sim.cachedPrefix(c), a.input)
	}
	return a, x.begin(a)
}

// now is the creation time of the answer in unix seconds.
func (x *exchange) now() int64 { return x.sim.o.Now().Unix() }

// begin sets the request-id header, waits the first-byte delay and answers a #sim:fail. It
// returns false when the exchange is over (failed on purpose, or the client left).
func (x *exchange) begin(a *answer) bool {
	switch x.proto {
	case protoOpenAI:
		x.w.Header().Set("X-Request-Id", "req_sim"+a.id)
	case protoAnthropic:
		x.w.Header().Set("Request-Id", "req_sim"+a.id)
	}
	if !x.sleep(x.sim.o.FirstByteDelay + a.d.delay) {
		return false
	}
	if a.d.fail != 0 {
		writeError(x.w, x.proto, a.d.fail, failMessage(a.d.fail))
		return false
	}
	return true
}

// sleep waits d unless the client goes away first; false when it did.
func (x *exchange) sleep(d time.Duration) bool {
	ctx := x.r.Context()
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// writeJSON sends a non-streaming answer of a reply with steps pieces: it first waits the time
// the stream would have taken (the chunk delays and any #sim:stall), and honours #sim:cut by
// sending half the body.
func (x *exchange) writeJSON(a *answer, steps int, v any) {
	x.writeBody(a, steps, "application/json", mustJSON(v))
}

// writeBody is writeJSON for a body already encoded, of any content type.
func (x *exchange) writeBody(a *answer, steps int, contentType string, b []byte) {
	wait := time.Duration(max(steps-1, 0)) * x.sim.o.ChunkDelay
	if a != nil {
		wait += a.d.stall
	}
	if !x.sleep(wait) {
		return
	}
	x.w.Header().Set("Content-Type", contentType)
	if a != nil && a.d.cut {
		x.w.WriteHeader(http.StatusOK)
		_, _ = x.w.Write(b[:len(b)/2])
		cutConnection(x.w, a.d.cutEOF)
		return
	}
	_, _ = x.w.Write(b)
}

// cutConnection ends a response early: a clean end of body when eof, otherwise the connection
// is dropped so the client sees a transport error, as when an upstream dies.
func cutConnection(w http.ResponseWriter, eof bool) {
	_ = http.NewResponseController(w).Flush()
	if !eof {
		panic(http.ErrAbortHandler)
	}
}
