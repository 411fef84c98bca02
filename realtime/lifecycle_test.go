package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
)

// A client that drops mid-session without a close ends core's side at once: Recv fails (not
// io.EOF: no close was received) and the stream's context is cancelled, so that the upstream
// call and any unfinished response end with it (spec 6.3).
func TestClientDropEndsCore(t *testing.T) {
	t.Parallel()
	e := newEcho()
	ws, _ := serve(t, &Handler{Realtime: e.run})
	c := mustDial(t, ws)
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"type":"response.create"}`)); err != nil {
		t.Fatal(err)
	}
	next(t, e.frames, "frame")
	c.UnderlyingConn().Close()
	end := next(t, e.ends, "end")
	if end.err == nil || errors.Is(end.err, io.EOF) {
		t.Errorf("Recv after a drop returned %v", end.err)
	}
	if end.ctxErr == nil {
		t.Error("the stream's context was not cancelled")
	}
}

// A core that is not reading (busy with its upstream) when the client drops still learns of
// it through the context.
func TestClientDropCancelsBusyCore(t *testing.T) {
	t.Parallel()
	done := make(chan error, 1)
	ws, _ := serve(t, &Handler{Realtime: func(st corev1.CoreService_RealtimeServer) error {
		if _, err := openSession(st); err != nil {
			return err
		}
		<-st.Context().Done()
		done <- st.Context().Err()
		return nil
	}})
	c := mustDial(t, ws)
	c.UnderlyingConn().Close()
	if err := next(t, done, "cancellation"); !errors.Is(err, context.Canceled) {
		t.Errorf("context ended with %v", err)
	}
}

// A session where nothing crosses for IdleTimeout is closed with 1001; the client's reply
// reaches core like any close.
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	e := newEcho()
	ws, _ := serve(t, &Handler{Realtime: e.run, IdleTimeout: 50 * time.Millisecond})
	c := mustDial(t, ws)
	if ce := readClose(t, c); ce.Code != websocket.CloseGoingAway || ce.Text != "idle timeout" {
		t.Errorf("client got close %d %q", ce.Code, ce.Text)
	}
	if f := next(t, e.frames, "close reply"); f.GetKind() != corev1.FrameKind_FRAME_KIND_CLOSE || f.GetCloseCode() != websocket.CloseGoingAway {
		t.Errorf("core received %v", f)
	}
	if end := next(t, e.ends, "end"); end.err != io.EOF {
		t.Errorf("Recv ended with %v", end.err)
	}
}

// A client message above MaxMessage closes the session with 1009; one at the limit crosses.
// The rest of the large message is read and dropped, so that the client can finish writing
// it and still read the close frame.
func TestMessageSizeLimit(t *testing.T) {
	t.Parallel()
	e := newEcho()
	ws, _ := serve(t, &Handler{Realtime: e.run, MaxMessage: 1024})
	c := mustDial(t, ws)
	if err := c.WriteMessage(websocket.BinaryMessage, make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	if f := next(t, e.frames, "frame"); len(f.GetData()) != 1024 {
		t.Errorf("core received %d bytes", len(f.GetData()))
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte(strings.Repeat("a", 8<<20))); err != nil {
		t.Fatal(err)
	}
	if ce := readClose(t, c); ce.Code != websocket.CloseMessageTooBig {
		t.Errorf("client got close %d %q", ce.Code, ce.Text)
	}
	if end := next(t, e.ends, "end"); end.err == nil || errors.Is(end.err, io.EOF) || end.ctxErr == nil {
		t.Errorf("core's side ended with %v (context %v)", end.err, end.ctxErr)
	}
}

// Shutdown closes every live session with 1001 and returns once they have all ended; new
// requests are refused with the envelope.
func TestShutdownDrains(t *testing.T) {
	t.Parallel()
	e := newEcho()
	h := &Handler{Realtime: e.run}
	ws, _ := serve(t, h)
	clients := []*websocket.Conn{mustDial(t, ws), mustDial(t, ws)}
	for range clients {
		next(t, e.opens, "open")
	}
	shut := make(chan error, 1)
	go func() { shut <- h.Shutdown(context.Background()) }()
	for _, c := range clients {
		if ce := readClose(t, c); ce.Code != websocket.CloseGoingAway || ce.Text != "server shutting down" {
			t.Errorf("client got close %d %q", ce.Code, ce.Text)
		}
	}
	if err := next(t, shut, "shutdown"); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	for range clients {
		if end := next(t, e.ends, "end"); end.err != io.EOF {
			t.Errorf("a session ended with %v", end.err)
		}
	}

	h2 := http.Header{"Authorization": {"Bearer sk-1"}, "X-Request-Id": {"req-late"}}
	_, resp, err := dial(t, ws+"?model=rt", h2)
	if err == nil || resp == nil {
		t.Fatalf("a new session during shutdown: %v", err)
	}
	var env apierror.Envelope
	if err := json.Unmarshal([]byte(body(t, resp)), &env); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || env.Error.Code != apierror.Unavailable || env.Error.RequestID != "req-late" {
		t.Errorf("refused with %d %+v", resp.StatusCode, env.Error)
	}
}

// A session that core opens while the server is shutting down is closed as soon as it opens.
func TestShutdownClosesSessionsStillOpening(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	e := newEcho()
	h := &Handler{Realtime: func(st corev1.CoreService_RealtimeServer) error {
		<-release // core is still dialling the upstream
		return e.run(st)
	}}
	ws, _ := serve(t, h)
	dialed := make(chan *websocket.Conn, 1)
	go func() {
		c, _, err := websocket.DefaultDialer.Dial(ws+"?model=rt", bearer("sk-1"))
		if err != nil {
			t.Error(err)
		}
		dialed <- c
	}()
	for len(h.live()) == 0 {
		time.Sleep(time.Millisecond)
	}
	shut := make(chan error, 1)
	go func() { shut <- h.Shutdown(context.Background()) }()
	for !h.isClosing() {
		time.Sleep(time.Millisecond)
	}
	close(release)
	c := next(t, dialed, "dial")
	if c == nil {
		t.FailNow()
	}
	defer c.Close()
	if ce := readClose(t, c); ce.Code != websocket.CloseGoingAway || ce.Text != "server shutting down" {
		t.Errorf("client got close %d %q", ce.Code, ce.Text)
	}
	if err := next(t, shut, "shutdown"); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// When the drain outlasts Shutdown's context, the remaining sessions are dropped and their
// contexts cancelled.
func TestShutdownForcesWhenContextEnds(t *testing.T) {
	t.Parallel()
	cancelled := make(chan error, 1)
	h := &Handler{Realtime: func(st corev1.CoreService_RealtimeServer) error {
		if _, err := openSession(st); err != nil {
			return err
		}
		<-st.Context().Done() // a core that ignores the client's close
		cancelled <- st.Context().Err()
		return nil
	}}
	ws, _ := serve(t, h)
	c := mustDial(t, ws)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown returned %v", err)
	}
	if err := next(t, cancelled, "cancellation"); !errors.Is(err, context.Canceled) {
		t.Errorf("the session's context ended with %v", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			break // the connection has gone, close frame or not
		}
	}
}

// What a close frame may carry.
func TestClosePayload(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		code   int
		reason string
		want   []byte
	}{
		{"no code", 0, "ignored", []byte{}},
		{"no status received", 1005, "", []byte{}},
		{"normal", 1000, "", []byte{0x03, 0xe8}},
		{"reason kept", 1008, "ok", []byte{0x03, 0xf0, 'o', 'k'}},
		{"abnormal closure is not sendable", 1006, "x", []byte{0x03, 0xf3, 'x'}},
		{"TLS failure is not sendable", 1015, "", []byte{0x03, 0xf3}},
		{"reserved 1004 is not sendable", 1004, "", []byte{0x03, 0xf3}},
		{"unassigned below 3000 is not sendable", 2000, "", []byte{0x03, 0xf3}},
		{"application range", 4999, "", []byte{0x13, 0x87}},
		{"beyond the range", 5000, "", []byte{0x03, 0xf3}},
		{"try again later", 1013, "", []byte{0x03, 0xf5}},
	}
	for _, c := range cases {
		if got := closePayload(c.code, c.reason); string(got) != string(c.want) {
			t.Errorf("%s: %x, want %x", c.name, got, c.want)
		}
	}
	long := closePayload(1000, strings.Repeat("€", 50)) // 3 bytes each
	if len(long) != 2+123 || !strings.HasSuffix(string(long), "€") {
		t.Errorf("long reason: %d bytes, %q", len(long), long[2:])
	}
}
