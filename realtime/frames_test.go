package realtime

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
)

// Every frame kind crosses the proxy both ways unchanged (spec 4.6.3): pings and pongs too,
// which the front does not answer itself.
func TestFramesCrossBothWays(t *testing.T) {
	t.Parallel()
	e := newEcho()
	ws, _ := serve(t, &Handler{Realtime: e.run})
	c := mustDial(t, ws)
	var mu sync.Mutex
	var pings, pongs []string
	c.SetPingHandler(func(d string) error { mu.Lock(); pings = append(pings, d); mu.Unlock(); return nil })
	c.SetPongHandler(func(d string) error { mu.Lock(); pongs = append(pongs, d); mu.Unlock(); return nil })

	sent := []*corev1.Frame{
		{Kind: corev1.FrameKind_FRAME_KIND_PING, Data: []byte("p1")},
		{Kind: corev1.FrameKind_FRAME_KIND_TEXT, Data: []byte(`{"type":"session.update","session":{"instructions":"héllo"}}`)},
		{Kind: corev1.FrameKind_FRAME_KIND_PONG, Data: []byte("q1")},
		{Kind: corev1.FrameKind_FRAME_KIND_BINARY, Data: []byte{0, 1, 2, 255}},
		{Kind: corev1.FrameKind_FRAME_KIND_TEXT, Data: []byte{}},
		{Kind: corev1.FrameKind_FRAME_KIND_PING, Data: []byte{}},
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, f := range sent {
		var err error
		switch f.GetKind() {
		case corev1.FrameKind_FRAME_KIND_PING:
			err = c.WriteControl(websocket.PingMessage, f.GetData(), deadline)
		case corev1.FrameKind_FRAME_KIND_PONG:
			err = c.WriteControl(websocket.PongMessage, f.GetData(), deadline)
		case corev1.FrameKind_FRAME_KIND_TEXT:
			err = c.WriteMessage(websocket.TextMessage, f.GetData())
		case corev1.FrameKind_FRAME_KIND_BINARY:
			err = c.WriteMessage(websocket.BinaryMessage, f.GetData())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range sent {
		got := next(t, e.frames, "frame")
		if got.GetKind() != want.GetKind() || string(got.GetData()) != string(want.GetData()) {
			t.Errorf("core received frame %d as %v %q, want %v %q", i, got.GetKind(), got.GetData(), want.GetKind(), want.GetData())
		}
	}
	// Back to the client: the data frames in order; the control frames before the data
	// frames that followed them (the handlers run inside ReadMessage).
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for _, want := range []struct {
		kind int
		data string
	}{{websocket.TextMessage, string(sent[1].GetData())}, {websocket.BinaryMessage, "\x00\x01\x02\xff"}, {websocket.TextMessage, ""}} {
		kind, data, err := c.ReadMessage()
		if err != nil || kind != want.kind || string(data) != want.data {
			t.Fatalf("client read %d %q %v, want %d %q", kind, data, err, want.kind, want.data)
		}
	}
	// The last ping has no data frame after it: a close flushes it through.
	if err := c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), deadline); err != nil {
		t.Fatal(err)
	}
	readClose(t, c)
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(pings) != "[p1 ]" || fmt.Sprint(pongs) != "[q1]" {
		t.Errorf("client got pings %q, pongs %q", pings, pongs)
	}
}

// Close codes and reasons are preserved both ways: the client's close reaches core and then
// ends Recv with io.EOF; core's close (the upstream's, relayed) reaches the client.
func TestClientCloseReachesCoreAndBack(t *testing.T) {
	t.Parallel()
	e := newEcho()
	ws, _ := serve(t, &Handler{Realtime: e.run})
	c := mustDial(t, ws)
	msg := websocket.FormatCloseMessage(4001, "done here")
	if err := c.WriteControl(websocket.CloseMessage, msg, time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	f := next(t, e.frames, "close frame")
	if f.GetKind() != corev1.FrameKind_FRAME_KIND_CLOSE || f.GetCloseCode() != 4001 || f.GetCloseReason() != "done here" {
		t.Errorf("core received %v", f)
	}
	if end := next(t, e.ends, "end"); end.err != io.EOF {
		t.Errorf("after the close, Recv returned %v", end.err)
	}
	if ce := readClose(t, c); ce.Code != 4001 || ce.Text != "done here" {
		t.Errorf("client got close %d %q", ce.Code, ce.Text)
	}
}

// Core's close frame reaches the client with its code and reason; what cannot travel in a
// close frame is made sendable; the client's reply reaches core.
func TestCoreCloseReachesClient(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		code      int32
		reason    string
		wantCode  int
		wantText  string
		wantReply int32
	}{
		{"balance exhausted", 1008, "insufficient_balance: the balance cannot pay for another response",
			1008, "insufficient_balance: the balance cannot pay for another response", 1008},
		{"application code", 4000, "bye", 4000, "bye", 4000},
		{"lost upstream (1006 never travels) becomes 1011", 1006, "unexpected EOF", 1011, "unexpected EOF", 1011},
		{"no code is an empty close", 0, "", websocket.CloseNoStatusReceived, "", websocket.CloseNoStatusReceived},
		{"a long reason is cut at a character", 1000, strings.Repeat("é", 100), 1000, strings.Repeat("é", 61), 1000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			replies := make(chan *corev1.Frame, 1)
			ws, _ := serve(t, &Handler{Realtime: func(st corev1.CoreService_RealtimeServer) error {
				if _, err := openSession(st); err != nil {
					return err
				}
				if err := st.Send(frameMsg(closeFrame(c.code, c.reason))); err != nil {
					return err
				}
				if err := st.Send(frameMsg(&corev1.Frame{Kind: corev1.FrameKind_FRAME_KIND_TEXT, Data: []byte("late")})); err == nil {
					t.Error("a data frame after the close was sent")
				}
				m, err := st.Recv()
				if err != nil {
					return err
				}
				replies <- m.GetFrame()
				return nil
			}})
			conn := mustDial(t, ws)
			if ce := readClose(t, conn); ce.Code != c.wantCode || ce.Text != c.wantText {
				t.Errorf("client got close %d %q, want %d %q", ce.Code, ce.Text, c.wantCode, c.wantText)
			}
			// gorilla's client answers a close with the same code.
			if r := next(t, replies, "close reply"); r.GetKind() != corev1.FrameKind_FRAME_KIND_CLOSE || r.GetCloseCode() != c.wantReply {
				t.Errorf("core received reply %v", r)
			}
		})
	}
}

// When core's side ends without a close frame, the client is told: 1000 for a normal end,
// 1011 with the error's code for a failure.
func TestCoreEndClosesClient(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		err      error
		wantCode int
		wantText string
	}{
		{"normal end", nil, 1000, ""},
		{"failure", apierror.New(apierror.UpstreamError, "the upstream went away"), 1011, "upstream_error: the upstream went away"},
		{"failure with a long message is cut", apierror.New(apierror.Internal, "%s", strings.Repeat("x", 200)),
			1011, "internal_error: " + strings.Repeat("x", 123-len("internal_error: "))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ws, _ := serve(t, &Handler{Realtime: func(st corev1.CoreService_RealtimeServer) error {
				if _, err := openSession(st); err != nil {
					return err
				}
				return c.err
			}})
			conn := mustDial(t, ws)
			if ce := readClose(t, conn); ce.Code != c.wantCode || ce.Text != c.wantText {
				t.Errorf("client got close %d %q, want %d %q", ce.Code, ce.Text, c.wantCode, c.wantText)
			}
		})
	}
}

// Core may send from two goroutines at once (its upstream loop and its refusals of client
// events); writes to the client are serialised (the race detector checks).
func TestConcurrentSends(t *testing.T) {
	t.Parallel()
	const n = 200
	ws, _ := serve(t, &Handler{Realtime: func(st corev1.CoreService_RealtimeServer) error {
		if _, err := openSession(st); err != nil {
			return err
		}
		var wg sync.WaitGroup
		for _, who := range []string{"a", "b"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range n {
					kind := corev1.FrameKind_FRAME_KIND_TEXT
					if i%10 == 0 {
						kind = corev1.FrameKind_FRAME_KIND_PING
					}
					if err := st.Send(frameMsg(&corev1.Frame{Kind: kind, Data: fmt.Appendf(nil, "%s%d", who, i)})); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		_, err := st.Recv() // the client's close
		return err
	}})
	c := mustDial(t, ws)
	var pings int
	c.SetPingHandler(func(string) error { pings++; return nil })
	last := map[byte]int{'a': -1, 'b': -1}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for range 2 * (n - n/10) {
		_, data, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		var i int
		fmt.Sscanf(string(data[1:]), "%d", &i)
		if i <= last[data[0]] {
			t.Fatalf("%q after %c%d", data, data[0], last[data[0]])
		}
		last[data[0]] = i
	}
	if err := c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(1000, ""), time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	readClose(t, c)
	if pings != 2*n/10 {
		t.Errorf("%d pings, want %d", pings, 2*n/10)
	}
}
