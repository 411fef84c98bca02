package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/shopspring/decimal"
	"go.uber.org/goleak"
)

// dialRealtime opens a session as a server-side client does (key in the header).
func (g *genEnv) dialRealtime(t *testing.T, model string, h http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	if h == nil {
		h = http.Header{"Authorization": {"Bearer " + g.key}}
	}
	url := "ws" + strings.TrimPrefix(g.base, "http") + "/v1/realtime?model=" + model
	return websocket.DefaultDialer.Dial(url, h)
}

// event reads the next text frame as a JSON event.
func event(t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	kind, data, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("reading an event: %v", err)
	}
	if kind != websocket.TextMessage {
		t.Fatalf("frame of kind %d", kind)
	}
	var ev map[string]any
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatalf("event %q: %v", data, err)
	}
	return ev
}

// until reads events until one of type typ.
func until(t *testing.T, c *websocket.Conn, typ string) map[string]any {
	t.Helper()
	for {
		if ev := event(t, c); ev["type"] == typ {
			return ev
		}
	}
}

func send(t *testing.T, c *websocket.Conn, ev string) {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(ev)); err != nil {
		t.Fatal(err)
	}
}

func ask(t *testing.T, c *websocket.Conn, text string) {
	t.Helper()
	send(t, c, `{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"`+text+`"}]}}`)
	send(t, c, `{"type":"response.create"}`)
}

// realtimeCost prices a response.done's usage: text and audio at their own rates, cache reads
// at the cached rate.
func realtimeCost(t *testing.T, done map[string]any, in, cached, out, audioIn, audioOut string) decimal.Decimal {
	t.Helper()
	u := done["response"].(map[string]any)["usage"].(map[string]any)
	n := func(m map[string]any, k string) int64 { v, _ := m[k].(float64); return int64(v) }
	details, _ := u["input_token_details"].(map[string]any)
	cachedDetails, _ := details["cached_tokens_details"].(map[string]any)
	outDetails, _ := u["output_token_details"].(map[string]any)
	c := n(details, "cached_tokens")
	aIn := n(details, "audio_tokens") - n(cachedDetails, "audio_tokens")
	aOut := n(outDetails, "audio_tokens")
	text := n(u, "input_tokens") - c - aIn
	return cost(text, in).Add(cost(aIn, audioIn)).Add(cost(c, cached)).Add(cost(n(u, "output_tokens")-aOut, out)).Add(cost(aOut, audioOut))
}

// A session: the public model is shown, a model switch is refused with an error event while
// the session goes on, every frame kind crosses both ways, and each response.done is charged
// once, by its usage.
func TestRealtimeSession(t *testing.T) {
	g := startMedia(t)
	c, resp, err := g.dialRealtime(t, "rt", nil)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	defer c.Close()
	created := event(t, c)
	if created["type"] != "session.created" || created["session"].(map[string]any)["model"] != "rt" {
		t.Fatalf("first event %v", created)
	}
	if up := g.up.last(t); up.Path != "/v1/realtime?model=gpt-realtime" || up.Header.Get("Authorization") != "Bearer "+upstreamKey {
		t.Errorf("upstream handshake %s, auth %q", up.Path, up.Header.Get("Authorization"))
	}

	send(t, c, `{"type":"session.update","event_id":"ev1","session":{"type":"realtime","model":"gpt-4o-realtime-preview","instructions":"be brief"}}`)
	refusal := event(t, c)
	e, _ := refusal["error"].(map[string]any)
	if refusal["type"] != "error" || e["code"] != "model_switch_not_allowed" || e["event_id"] != "ev1" || e["type"] != "invalid_request_error" {
		t.Fatalf("model switch answered with %v", refusal)
	}
	send(t, c, `{"type":"session.update","session":{"type":"realtime","model":"rt","instructions":"be brief"}}`)
	if updated := until(t, c, "session.updated"); updated["session"].(map[string]any)["model"] != "rt" {
		t.Errorf("session.updated shows %v", updated["session"])
	}

	// A text answer, then an audio one: audio tokens at the audio rates.
	var want decimal.Decimal
	for i, prompt := range []string{"hello there", "say it aloud #sim:audio"} {
		ask(t, c, prompt)
		done := until(t, c, "response.done")
		if i == 1 && done["response"].(map[string]any)["usage"].(map[string]any)["output_token_details"].(map[string]any)["audio_tokens"].(float64) == 0 {
			t.Fatalf("the audio answer reports no audio tokens: %v", done)
		}
		want = want.Add(realtimeCost(t, done, "100", "10", "400", "800", "1600"))
		if i == 0 {
			g.settled(t, g.profileID, 1)
		}
	}
	balance := g.settled(t, g.profileID, 2)
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
	g := startMedia(t)
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
				h = http.Header{"Authorization": {"Bearer " + g.key}}
			}
			h.Set("X-Request-Id", "rt-"+strings.ReplaceAll(c.name, " ", "-"))
			conn, resp, err := g.dialRealtime(t, c.model, h)
			if err == nil {
				conn.Close()
				t.Fatal("upgraded")
			}
			if resp == nil {
				t.Fatalf("no HTTP answer: %v", err)
			}
			raw, _ := io.ReadAll(resp.Body)
			code, _, id := envelope(t, raw)
			if code != c.code || (c.status != 0 && resp.StatusCode != c.status) || id != h.Get("X-Request-Id") {
				t.Errorf("got %d %s (id %q), want %s", resp.StatusCode, code, id, c.code)
			}
		})
	}

	url := "ws" + strings.TrimPrefix(g.base, "http") + "/v1/realtime?model=rt"
	d := websocket.Dialer{Subprotocols: []string{"realtime", "openai-insecure-api-key." + g.key}}
	conn, resp, err := d.Dial(url, nil)
	if err != nil {
		t.Fatalf("subprotocol key: %v", err)
	}
	defer conn.Close()
	if resp.Header.Get("Sec-WebSocket-Protocol") != "realtime" {
		t.Errorf("subprotocol answer %q", resp.Header.Get("Sec-WebSocket-Protocol"))
	}
	if ev := event(t, conn); ev["type"] != "session.created" {
		t.Errorf("first event %v", ev)
	}
}

// A session whose balance cannot pay for another response is closed after the response that
// exhausted it, with a clear reason; that response is charged.
func TestRealtimeBalanceExhausted(t *testing.T) {
	g := startMedia(t)
	// rt-dear: output at 100000 per 1M; the reserve of a response is 4096 output tokens =
	// 409.6. A credit of 410 opens the session; any answer of 4 tokens or more exhausts it.
	key, pid := g.newProfile(t, "poor", "410")
	c, _, err := g.dialRealtime(t, "rt-dear", http.Header{"Authorization": {"Bearer " + key}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	until(t, c, "session.created")
	ask(t, c, "tell me a long story")
	done := until(t, c, "response.done")
	_, _, err = c.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "insufficient_balance") {
		t.Fatalf("after the response: %v", err)
	}
	balance := g.settled(t, pid, 1)
	if want := decimal.NewFromInt(410).Sub(realtimeCost(t, done, "0", "0", "100000", "0", "100000")); !balance.Equal(want) {
		t.Errorf("balance %s, want %s", balance, want)
	}
}

// Either side dropping mid-response ends the session at once, leaves no goroutine behind, and
// a response the upstream cut is not charged.
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

// The public catalogue shows audio rates on the price sets that name them, and keeps the five
// components of spec 2.2 everywhere else.
func TestCatalogAudioComponents(t *testing.T) {
	g := startMedia(t)
	status, _, cat := g.do("GET", "/v1/catalog", nil, "")
	if status != 200 {
		t.Fatalf("catalog: %d", status)
	}
	seen := 0
	for _, f := range cat["families"].([]any) {
		for _, m := range f.(map[string]any)["models"].([]any) {
			mm := m.(map[string]any)
			comps := mm["prices"].([]any)[0].(map[string]any)["components"].(map[string]any)
			switch mm["id"] {
			case "rt":
				seen++
				if a, _ := comps["audio_input"].(map[string]any); a["amount"] != "800" || a["unit"] != "RUB_per_1M_tokens" {
					t.Errorf("rt audio_input = %v", comps["audio_input"])
				}
			case "dalle":
				seen++
				if _, ok := comps["audio_input"]; ok || len(comps) != 5 {
					t.Errorf("dalle components %v, want the five of spec 2.2", comps)
				}
			}
		}
	}
	if seen != 2 {
		t.Fatalf("found %d of the two models", seen)
	}
}
