package main

import (
	"errors"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/shopspring/decimal"
	"go.uber.org/goleak"

	"modelgateway/core/gatewaytest"
)

// dialRealtime opens a session as a server-side client does (key in the header).
func (g *genEnv) dialRealtime(t *testing.T, model string, h http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	if h == nil {
		h = http.Header{"Authorization": {"Bearer " + g.key}}
	}
	return gatewaytest.DialRealtime(g.base, model, h)
}

// The realtime client helpers of gatewaytest, under the names the root's tests use.
func event(t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	return gatewaytest.Event(t, c)
}

func until(t *testing.T, c *websocket.Conn, typ string) map[string]any {
	t.Helper()
	return gatewaytest.Until(t, c, typ)
}

func send(t *testing.T, c *websocket.Conn, ev string) { t.Helper(); gatewaytest.Send(t, c, ev) }

func ask(t *testing.T, c *websocket.Conn, text string) { t.Helper(); gatewaytest.Ask(t, c, text) }

func realtimeCost(t *testing.T, done map[string]any, in, cached, out, audioIn, audioOut string) decimal.Decimal {
	t.Helper()
	return gatewaytest.RealtimeCost(t, done, in, cached, out, audioIn, audioOut)
}

// Either side dropping mid-response ends the session at once, leaves no goroutine behind, and
// a response the upstream cut is not charged. It stays at the root: the leak check counts the
// gateway's own goroutines, which only an in-process gateway shows.
func TestRealtimeDropsMidResponse(t *testing.T) {
	g := startMedia(t)
	warm, _, err := g.dialRealtime(t, "rt", nil)
	if err != nil {
		t.Fatal(err)
	}
	until(t, warm, "session.created")
	warm.Close()
	http.DefaultClient.CloseIdleConnections()
	quiesce(t)
	baseline := goleak.IgnoreCurrent()

	// The upstream drops the connection in the middle of a response.
	c, _, err := g.dialRealtime(t, "rt", nil)
	if err != nil {
		t.Fatal(err)
	}
	until(t, c, "session.created")
	ask(t, c, "hello #sim:cut")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.CloseInternalServerErr {
			t.Fatalf("upstream drop reached the client as %v", err)
		}
		break
	}
	c.Close()
	// The cut response was not charged: a complete one after it settles as the one and only
	// charge (a wrong charge of the cut one would have settled no later).
	c, _, err = g.dialRealtime(t, "rt", nil)
	if err != nil {
		t.Fatal(err)
	}
	until(t, c, "session.created")
	ask(t, c, "hello there")
	done := until(t, c, "response.done")
	if b := g.settled(t, g.profileID, 1); !b.Equal(decimal.NewFromInt(1000).Sub(realtimeCost(t, done, "100", "10", "400", "800", "1600"))) {
		t.Errorf("balance %s after a cut response and a complete one", b)
	}
	c.Close()

	// The client drops (no close frame) in the middle of a response. (Whether that response
	// is charged depends on whether the upstream's response.done reaches core before the drop
	// does: realtime charges what the upstream reports it billed, so it is not checked here.)
	c, _, err = g.dialRealtime(t, "rt", nil)
	if err != nil {
		t.Fatal(err)
	}
	until(t, c, "session.created")
	ask(t, c, "hello there")
	until(t, c, "response.created")
	c.UnderlyingConn().Close()

	deadline := time.Now().Add(20 * time.Second)
	for goleak.Find(baseline) != nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	goleak.VerifyNone(t, baseline)
}

// quiesce waits until the number of goroutines has stopped changing (the same count over
// 300 ms), so that a leak baseline does not catch a teardown half way. Bounded generously.
func quiesce(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	last, since := runtime.NumGoroutine(), time.Now()
	for time.Since(since) < 300*time.Millisecond && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		if n := runtime.NumGoroutine(); n != last {
			last, since = n, time.Now()
		}
	}
}
