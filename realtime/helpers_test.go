package realtime

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"google.golang.org/grpc/metadata"

	corev1 "modelgateway/gen/gateway/core/v1"
)

// serve starts h behind a test server; cleanup drains the sessions, then stops the server.
func serve(t *testing.T, h *Handler) (wsURL, httpURL string) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("draining the sessions: %v", err)
		}
		srv.Close()
	})
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/realtime", srv.URL + "/v1/realtime"
}

// dial opens a session as a client does; the connection is closed at cleanup.
func dial(t *testing.T, url string, h http.Header, protocols ...string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	d := websocket.Dialer{Subprotocols: protocols, HandshakeTimeout: 10 * time.Second}
	c, resp, err := d.Dial(url, h)
	if c != nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, resp, err
}

// mustDial opens a session with a bearer key.
func mustDial(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	c, resp, err := dial(t, url+"?model=rt", bearer("sk-test"))
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	return c
}

func bearer(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} }

// readClose reads until the connection ends and returns the close the client received.
func readClose(t *testing.T, c *websocket.Conn) *websocket.CloseError {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if !errors.As(err, &ce) {
			t.Fatalf("the connection ended without a close frame: %v", err)
		}
		return ce
	}
}

// opened is what core learns when a session opens.
type opened struct {
	open *corev1.RealtimeOpen
	md   metadata.MD
}

// ended is how core's side of a session ended: the Recv error and the context's state then.
type ended struct {
	err    error
	ctxErr error
}

// echo plays core: it opens every session and sends back every frame it receives, close
// included. What it saw is reported on its channels (buffered: tests read what they check).
type echo struct {
	opens  chan opened
	frames chan *corev1.Frame
	ends   chan ended
}

func newEcho() *echo {
	return &echo{opens: make(chan opened, 16), frames: make(chan *corev1.Frame, 256), ends: make(chan ended, 16)}
}

func (e *echo) run(st corev1.CoreService_RealtimeServer) error {
	o, err := openSession(st)
	if err != nil {
		return err
	}
	e.opens <- o
	for {
		m, err := st.Recv()
		if err != nil {
			e.ends <- ended{err, st.Context().Err()}
			return nil
		}
		f := m.GetFrame()
		e.frames <- f
		if err := st.Send(frameMsg(f)); err != nil {
			e.ends <- ended{err, st.Context().Err()}
			return nil
		}
	}
}

// openSession reads the open message and opens the session, as core does when it admits it.
func openSession(st corev1.CoreService_RealtimeServer) (opened, error) {
	first, err := st.Recv()
	if err != nil {
		return opened{}, err
	}
	md, _ := metadata.FromIncomingContext(st.Context())
	o := opened{open: first.GetOpen(), md: md}
	return o, st.Send(&corev1.RealtimeResponse{Msg: &corev1.RealtimeResponse_Opened{Opened: &corev1.RealtimeOpened{SessionId: "sess-1"}}})
}

func frameMsg(f *corev1.Frame) *corev1.RealtimeResponse {
	return &corev1.RealtimeResponse{Msg: &corev1.RealtimeResponse_Frame{Frame: f}}
}

func closeFrame(code int32, reason string) *corev1.Frame {
	return &corev1.Frame{Kind: corev1.FrameKind_FRAME_KIND_CLOSE, CloseCode: code, CloseReason: reason}
}

// next waits for one report of a fake core.
func next[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}

// body reads a whole response body.
func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
