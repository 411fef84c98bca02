package front

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// deadlineRecorder is a ResponseWriter that notes the read deadlines set through its
// ResponseController.
type deadlineRecorder struct {
	http.ResponseWriter
	sets []time.Time
}

func (d *deadlineRecorder) SetReadDeadline(t time.Time) error {
	d.sets = append(d.sets, t)
	return nil
}

// readyBody is a body that says whether its next read can wait (front/h1's body does).
type readyBody struct {
	io.Reader
	ready bool
}

func (r *readyBody) Ready() bool  { return r.ready }
func (r *readyBody) Close() error { return nil }

// A paced body times the client's reads with the connection's read deadline and lifts it at
// the end; a read that cannot wait (the body's bytes buffered already) is not timed, and
// nothing is lifted when nothing was set.
func TestPacedBodyTimesOnlyReadsThatCanWait(t *testing.T) {
	for _, tc := range []struct {
		name  string
		body  io.ReadCloser
		armed bool
	}{
		{"buffered", &readyBody{Reader: strings.NewReader(`{"a":1}`), ready: true}, false},
		{"arriving", &readyBody{Reader: strings.NewReader(`{"a":1}`)}, true},
		{"unknown", io.NopCloser(strings.NewReader(`{"a":1}`)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &deadlineRecorder{ResponseWriter: httptest.NewRecorder()}
			p := &pacedBody{body: tc.body, rc: *http.NewResponseController(w), header: w.Header(),
				start: time.Now(), limits: Limits{BodyIdle: time.Minute}}
			got, err := io.ReadAll(p)
			if err != nil || string(got) != `{"a":1}` {
				t.Fatalf("read %q, %v", got, err)
			}
			p.release()
			if !tc.armed {
				if len(w.sets) != 0 {
					t.Fatalf("deadlines set for reads that could not wait: %v", w.sets)
				}
				return
			}
			if len(w.sets) < 2 || w.sets[0].Before(time.Now()) || !w.sets[len(w.sets)-1].IsZero() {
				t.Fatalf("deadlines %v: want one ahead first and a lifted one last", w.sets)
			}
		})
	}
}
