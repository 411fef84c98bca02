package relay

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// A held answer's buffer goes back to the pool when it is sent, and the next held answer
// writes into it: the first answer, already written, keeps its bytes.
func TestHeldAnswersShareABufferOneAfterTheOther(t *testing.T) {
	send := func(body string) (*httptest.ResponseRecorder, *[]byte) {
		rec := httptest.NewRecorder()
		h := &heldResponse{header: rec.Header(), status: http.StatusOK}
		h.Write([]byte(body[:3]))
		h.Write([]byte(body[3:]))
		buf := h.buf
		h.send(rec)
		if h.buf != nil || h.body != nil {
			t.Fatal("a sent answer keeps its buffer")
		}
		return rec, buf
	}
	// The pool may drop what it is given (a GC between Put and Get): try a few times.
	for range 10 {
		first, b1 := send(`{"answer":"first"}`)
		second, b2 := send(`{"answer":"2nd"}`)
		if got := first.Body.String(); got != `{"answer":"first"}` {
			t.Fatalf("the first answer became %q", got)
		}
		if got := second.Body.String(); got != `{"answer":"2nd"}` {
			t.Fatalf("the second answer is %q", got)
		}
		if b1 == b2 {
			return
		}
	}
	t.Fatal("the second answer never took the first's buffer")
}
