package realtime_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/shopspring/decimal"

	"modelgateway/core/gatewaytest"
)

// A session: the public model is shown, a model switch is refused with an error event while
// the session goes on, every frame kind crosses both ways, and each response.done is charged
// once, by its usage.
func TestRealtimeSession(t *testing.T) {
	g := gatewaytest.StartMedia(t, gatewaytest.Options{})
	c, resp, err := g.DialRealtime(t, "rt", nil)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	defer c.Close()
	created := gatewaytest.Event(t, c)
	if created["type"] != "session.created" || created["session"].(map[string]any)["model"] != "rt" {
		t.Fatalf("first event %v", created)
	}
	if up := g.Up.Last(t); up.Path != "/v1/realtime?model=gpt-realtime" || up.Header.Get("Authorization") != "Bearer "+gatewaytest.UpstreamKey {
		t.Errorf("upstream handshake %s, auth %q", up.Path, up.Header.Get("Authorization"))
	}

	gatewaytest.Send(t, c, `{"type":"session.update","event_id":"ev1","session":{"type":"realtime","model":"gpt-4o-realtime-preview","instructions":"be brief"}}`)
	refusal := gatewaytest.Event(t, c)
	e, _ := refusal["error"].(map[string]any)
	if refusal["type"] != "error" || e["code"] != "model_switch_not_allowed" || e["event_id"] != "ev1" || e["type"] != "invalid_request_error" {
		t.Fatalf("model switch answered with %v", refusal)
	}
	gatewaytest.Send(t, c, `{"type":"session.update","session":{"type":"realtime","model":"rt","instructions":"be brief"}}`)
	if updated := gatewaytest.Until(t, c, "session.updated"); updated["session"].(map[string]any)["model"] != "rt" {
		t.Errorf("session.updated shows %v", updated["session"])
	}

	// A text answer, then an audio one: audio tokens at the audio rates.
	var want decimal.Decimal
	for i, prompt := range []string{"hello there", "say it aloud #sim:audio"} {
		gatewaytest.Ask(t, c, prompt)
		done := gatewaytest.Until(t, c, "response.done")
		if i == 1 && done["response"].(map[string]any)["usage"].(map[string]any)["output_token_details"].(map[string]any)["audio_tokens"].(float64) == 0 {
			t.Fatalf("the audio answer reports no audio tokens: %v", done)
		}
		want = want.Add(gatewaytest.RealtimeCost(t, done, "100", "10", "400", "800", "1600"))
		if i == 0 {
			gatewaytest.Settled(t, g.Pool(), g.ProfileID, 1)
		}
	}
	balance := gatewaytest.Settled(t, g.Pool(), g.ProfileID, 2)
	if !balance.Equal(decimal.NewFromInt(1000).Sub(want)) {
		t.Errorf("balance %s, want 1000 - %s", balance, want)
	}

	// Binary frames, pings and pongs are proxied (the simulator echoes binary frames and
	// answers pings itself, so the pong comes from the upstream).
	pong := make(chan string, 1)
	c.SetPongHandler(func(d string) error { pong <- d; return nil })
	if err := c.WriteControl(websocket.PingMessage, []byte("p1"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteMessage(websocket.BinaryMessage, []byte{0, 1, 2, 255}); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	kind, data, err := c.ReadMessage()
	if err != nil || kind != websocket.BinaryMessage || string(data) != "\x00\x01\x02\xff" {
		t.Fatalf("binary echo: %d %q %v", kind, data, err)
	}
	select {
	case d := <-pong:
		if d != "p1" {
			t.Errorf("pong %q", d)
		}
	case <-time.After(5 * time.Second):
		t.Error("no pong")
	}

	// A close handshake started by the client ends with the code it chose.
	if err := c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4001, "done here"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4001 {
		t.Errorf("close answered with %v", err)
	}
}

// Refusals come before the upgrade, as the spec envelope with its status and request id; the
// browser form of the key (a subprotocol) works and is answered with "realtime".
func TestRealtimeHandshake(t *testing.T) {
	g := gatewaytest.StartMedia(t, gatewaytest.Options{})
	cases := []struct {
		name   string
		model  string
		header http.Header
		status int
		code   string
	}{
		{"no key", "rt", http.Header{}, 401, "invalid_key"},
		{"bad key", "rt", http.Header{"Authorization": {"Bearer nope"}}, 401, "invalid_key"},
		{"unknown model", "nope", nil, 0, "model_not_found"},
		{"not a realtime model", "dalle", nil, 0, "model_not_found"},
		{"no price", "unpriced", nil, 0, "model_not_found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := c.header
			if h == nil {
				h = http.Header{"Authorization": {"Bearer " + g.Key}}
			}
			h.Set("X-Request-Id", "rt-"+strings.ReplaceAll(c.name, " ", "-"))
			conn, resp, err := g.DialRealtime(t, c.model, h)
			if err == nil {
				conn.Close()
				t.Fatal("upgraded")
			}
			if resp == nil {
				t.Fatalf("no HTTP answer: %v", err)
			}
			raw, _ := io.ReadAll(resp.Body)
			code, _, id := gatewaytest.Envelope(t, raw)
			if code != c.code || (c.status != 0 && resp.StatusCode != c.status) || id != h.Get("X-Request-Id") {
				t.Errorf("got %d %s (id %q), want %s", resp.StatusCode, code, id, c.code)
			}
		})
	}

	url := "ws" + strings.TrimPrefix(g.Base, "http") + "/v1/realtime?model=rt"
	d := websocket.Dialer{Subprotocols: []string{"realtime", "openai-insecure-api-key." + g.Key}}
	conn, resp, err := d.Dial(url, nil)
	if err != nil {
		t.Fatalf("subprotocol key: %v", err)
	}
	defer conn.Close()
	if resp.Header.Get("Sec-WebSocket-Protocol") != "realtime" {
		t.Errorf("subprotocol answer %q", resp.Header.Get("Sec-WebSocket-Protocol"))
	}
	if ev := gatewaytest.Event(t, conn); ev["type"] != "session.created" {
		t.Errorf("first event %v", ev)
	}
}

// A session whose balance cannot pay for another response is closed after the response that
// exhausted it, with a clear reason; that response is charged.
func TestRealtimeBalanceExhausted(t *testing.T) {
	g := gatewaytest.StartMedia(t, gatewaytest.Options{})
	// rt-dear: output at 100000 per 1M; the reserve of a response is 4096 output tokens =
	// 409.6. A credit of 410 opens the session; any answer of 4 tokens or more exhausts it.
	key, pid := g.NewProfile("poor", "410")
	c, _, err := g.DialRealtime(t, "rt-dear", http.Header{"Authorization": {"Bearer " + key}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	gatewaytest.Until(t, c, "session.created")
	gatewaytest.Ask(t, c, "tell me a long story")
	done := gatewaytest.Until(t, c, "response.done")
	_, _, err = c.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "insufficient_balance") {
		t.Fatalf("after the response: %v", err)
	}
	balance := gatewaytest.Settled(t, g.Pool(), pid, 1)
	if want := decimal.NewFromInt(410).Sub(gatewaytest.RealtimeCost(t, done, "0", "0", "100000", "0", "100000")); !balance.Equal(want) {
		t.Errorf("balance %s, want %s", balance, want)
	}
}
