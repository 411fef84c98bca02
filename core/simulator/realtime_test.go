package simulator

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/openai/openai-go/v3/realtime"
	"go.uber.org/goleak"
)

// The realtime tests are not parallel: each checks that the connection's goroutines end with
// it, and other tests' goroutines would blur the picture.

// noLeaks fails the test if goroutines it started outlive it. Registered first, its cleanup
// runs last, after the server and the connections are closed.
func noLeaks(t *testing.T) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
}

// rtClient is a test client of the realtime route.
type rtClient struct {
	t  *testing.T
	ws *websocket.Conn
}

// dial connects to the simulator at url the way the browser SDK does.
func dial(t *testing.T, url, query string) (*rtClient, *http.Response) {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{"realtime", "openai-insecure-api-key.sk-test"}}
	ws, resp, err := d.Dial("ws"+strings.TrimPrefix(url, "http")+"/v1/realtime"+query, http.Header{"Authorization": {"Bearer sk-test"}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { ws.Close() })
	return &rtClient{t, ws}, resp
}

func (c *rtClient) send(event string) {
	c.t.Helper()
	if err := c.ws.WriteMessage(websocket.TextMessage, []byte(event)); err != nil {
		c.t.Fatal(err)
	}
}

// next reads the next server event; a safety deadline keeps a broken server from hanging
// the test.
func (c *rtClient) next() (realtime.RealtimeServerEventUnion, []byte) {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	typ, data, err := c.ws.ReadMessage()
	if err != nil {
		c.t.Fatalf("reading an event: %v", err)
	}
	if typ != websocket.TextMessage {
		c.t.Fatalf("a %d frame where an event was expected", typ)
	}
	var ev realtime.RealtimeServerEventUnion
	if err := json.Unmarshal(data, &ev); err != nil {
		c.t.Fatalf("the SDK cannot read %s: %v", data, err)
	}
	return ev, data
}

// until reads events up to and including one of type last, and returns them all.
func (c *rtClient) until(last string) []realtime.RealtimeServerEventUnion {
	c.t.Helper()
	var out []realtime.RealtimeServerEventUnion
	for {
		ev, _ := c.next()
		out = append(out, ev)
		if ev.Type == last {
			return out
		}
	}
}

func types(evs []realtime.RealtimeServerEventUnion) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// checkUsage asserts that a response's usage adds up.
func checkUsage(t *testing.T, u realtime.RealtimeResponseUsage) {
	t.Helper()
	in, out := u.InputTokenDetails, u.OutputTokenDetails
	cached := in.CachedTokensDetails
	if u.InputTokens != in.TextTokens+in.AudioTokens+in.ImageTokens || u.OutputTokens != out.TextTokens+out.AudioTokens ||
		u.TotalTokens != u.InputTokens+u.OutputTokens || in.CachedTokens > u.InputTokens ||
		in.CachedTokens != cached.TextTokens+cached.AudioTokens+cached.ImageTokens {
		t.Errorf("usage does not add up: %s", u.RawJSON())
	}
}

const userItem = `{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":%s}]}}`

func itemEvent(text string) string { return strings.Replace(userItem, "%s", q(text), 1) }

func TestRealtimeConversation(t *testing.T) {
	noLeaks(t)
	sim, url := start(t, Options{Words: 5})
	c, resp := dial(t, url, "?model=gpt-realtime")
	if p := resp.Header.Get("Sec-WebSocket-Protocol"); p != "realtime" {
		t.Errorf("subprotocol %q, want realtime", p)
	}
	if sim.LastHeaders().Get("Authorization") != "Bearer sk-test" || sim.LastQuery().Get("model") != "gpt-realtime" || sim.Requests("/v1/realtime") != 1 {
		t.Errorf("recorded headers %v, query %v", sim.LastHeaders(), sim.LastQuery())
	}
	var transcript bytes.Buffer
	record := func(n int) {
		for range n {
			_, raw := c.next()
			transcript.Write(raw)
			transcript.WriteByte('\n')
		}
	}

	ev, raw := c.next()
	transcript.Write(raw)
	transcript.WriteByte('\n')
	var created struct {
		Session struct {
			ID, Object, Type, Model string
			OutputModalities        []string `json:"output_modalities"`
		}
	}
	if err := json.Unmarshal(raw, &created); err != nil || ev.Type != "session.created" || created.Session.Model != "gpt-realtime" ||
		created.Session.Object != "realtime.session" || created.Session.Type != "realtime" || created.Session.ID == "" ||
		strings.Join(created.Session.OutputModalities, ",") != "text" {
		t.Fatalf("first event %s", raw)
	}

	c.send(`{"type":"session.update","session":{"type":"realtime","model":"gpt-realtime-mini","instructions":"Be brief."}}`)
	ev, raw = c.next()
	if ev.Type != "session.updated" || !strings.Contains(string(raw), `"model":"gpt-realtime-mini"`) || !strings.Contains(string(raw), `"instructions":"Be brief."`) {
		t.Errorf("session.updated %s", raw)
	}
	transcript.Write(raw)
	transcript.WriteByte('\n')

	c.send(itemEvent("hello there #sim:cache=3"))
	record(2)
	c.send(`{"type":"response.create"}`)
	start := transcript.Len()
	record(12) // created, item added, part added, 5 deltas, text done, part done, item done, done
	golden(t, "realtime-text.jsonl", transcript.Bytes())

	// The same events through the SDK's types.
	var evs []realtime.RealtimeServerEventUnion
	for _, line := range bytes.Split(bytes.TrimSpace(transcript.Bytes()[start:]), []byte("\n")) {
		var ev realtime.RealtimeServerEventUnion
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	want := "response.created response.output_item.added response.content_part.added " + strings.Repeat("response.output_text.delta ", 5) +
		"response.output_text.done response.content_part.done response.output_item.done response.done"
	if got := strings.Join(types(evs), " "); got != want {
		t.Fatalf("events %s", got)
	}
	var text strings.Builder
	for _, ev := range evs[3:8] {
		text.WriteString(ev.AsResponseTextDeltaEvent().Delta)
	}
	done := evs[11].AsResponseDoneEvent().Response
	final := done.Output[0].AsRealtimeConversationItemAssistantMessage()
	if evs[8].AsResponseTextDoneEvent().Text != text.String() || final.Content[0].Text != text.String() || final.Content[0].Type != "output_text" {
		t.Errorf("deltas %q, done %s", text.String(), done.RawJSON())
	}
	checkAnswer(t, text.String(), 5)
	u := done.Usage
	checkUsage(t, u)
	// "Be brief." and the user text: 9+24 bytes = 9 tokens, 3 of them cached; one token a word.
	if done.Status != "completed" || u.InputTokens != 9 || u.InputTokenDetails.CachedTokens != 3 || u.InputTokenDetails.CachedTokensDetails.TextTokens != 3 || u.OutputTokens != 5 {
		t.Errorf("response %s", done.RawJSON())
	}

	// The answer joins the conversation: the next response has more input.
	c.send(`{"type":"response.create"}`)
	evs = c.until("response.done")
	if u2 := evs[len(evs)-1].AsResponseDoneEvent().Response.Usage; u2.InputTokens <= u.InputTokens {
		t.Errorf("second response input %d, first %d", u2.InputTokens, u.InputTokens)
	}
}

// #sim:response-id makes the upstream repeat a response id, as a misbehaving provider might;
// without it every response has its own.
func TestRealtimeResponseIDDirectiveRepeatsTheID(t *testing.T) {
	noLeaks(t)
	_, url := start(t, Options{})
	c, _ := dial(t, url, "?model=gpt-realtime")
	c.next() // session.created
	c.send(itemEvent("hello"))
	c.next()
	c.send(`{"type":"response.create"}`)
	first := c.until("response.done")
	c.send(`{"type":"response.create"}`)
	second := c.until("response.done")
	a, b := first[len(first)-1].AsResponseDoneEvent().Response.ID, second[len(second)-1].AsResponseDoneEvent().Response.ID
	if a == "" || a == b {
		t.Fatalf("fresh ids %q and %q", a, b)
	}
	c.send(itemEvent("again #sim:response-id=resp_dup"))
	c.next()
	for range 2 {
		c.send(`{"type":"response.create"}`)
		evs := c.until("response.done")
		if id := evs[len(evs)-1].AsResponseDoneEvent().Response.ID; id != "resp_dup" {
			t.Fatalf("response id %q, want resp_dup", id)
		}
	}
}

func TestRealtimeErrorsKeepTheSocketOpen(t *testing.T) {
	noLeaks(t)
	_, url := start(t, Options{})
	c, _ := dial(t, url, "?model=m")
	c.next()
	cases := []struct{ event, code string }{
		{`{"type":"nope.nope","event_id":"evt_1"}`, "invalid_value"},
		{`{"type":"response.cancel","event_id":"evt_2"}`, "response_cancel_not_active"},
		{`{"type":"input_audio_buffer.commit","event_id":"evt_3"}`, "input_audio_buffer_commit_empty"},
		{`{"type":"conversation.item.create","event_id":"evt_4","item":{"role":"user"}}`, "missing_required_parameter"},
		{`{"type":"conversation.item.delete","event_id":"evt_5","item_id":"item_x"}`, "invalid_value"},
		{`{not json`, "invalid_json"},
	}
	for _, tc := range cases {
		c.send(tc.event)
		ev, raw := c.next()
		e := ev.AsRealtimeErrorEvent().Error
		var id struct {
			EventID string `json:"event_id"`
		}
		_ = json.Unmarshal([]byte(tc.event), &id)
		if ev.Type != "error" || e.Type != "invalid_request_error" || e.Code != tc.code || e.Message == "" || e.EventID != id.EventID ||
			!strings.Contains(string(raw), `"param":null`) {
			t.Errorf("%s: %s", tc.event, raw)
		}
	}
	c.send(`{"type":"input_audio_buffer.clear"}`)
	if ev, _ := c.next(); ev.Type != "input_audio_buffer.cleared" {
		t.Errorf("after the errors: %s", ev.Type)
	}
}

func TestRealtimeAudio(t *testing.T) {
	noLeaks(t)
	_, url := start(t, Options{Words: 4})
	c, _ := dial(t, url, "?model=m")
	c.next()
	second := base64.StdEncoding.EncodeToString(make([]byte, 48000)) // 1 s of 24 kHz PCM16
	c.send(`{"type":"input_audio_buffer.append","audio":"` + second + `"}`)
	c.send(`{"type":"input_audio_buffer.commit"}`)
	evs := c.until("conversation.item.done")
	if got := strings.Join(types(evs), " "); got != "input_audio_buffer.committed conversation.item.added conversation.item.done" {
		t.Fatalf("commit: %s", got)
	}
	if committed := evs[0].AsInputAudioBufferCommittedEvent(); committed.ItemID != evs[2].AsConversationItemDone().Item.AsRealtimeConversationItemUserMessage().ID {
		t.Errorf("committed %s, item %s", committed.RawJSON(), evs[2].RawJSON())
	}
	c.send(itemEvent("say it #sim:audio"))
	c.until("conversation.item.done")
	c.send(`{"type":"response.create"}`)
	evs = c.until("response.done")
	var audio, transcript int
	for _, ev := range evs {
		switch ev.Type {
		case "response.output_audio.delta":
			if pcm, err := base64.StdEncoding.DecodeString(ev.AsResponseAudioDeltaEvent().Delta); err != nil || len(pcm) != 4800 {
				t.Errorf("audio delta of %d bytes (%v)", len(pcm), err)
			}
			audio++
		case "response.output_audio_transcript.delta":
			transcript++
		case "response.output_text.delta":
			t.Errorf("a text delta in an audio response")
		}
	}
	done := evs[len(evs)-1].AsResponseDoneEvent().Response
	u := done.Usage
	checkUsage(t, u)
	if audio != 4 || transcript != 4 || u.InputTokenDetails.AudioTokens != 10 || u.OutputTokenDetails.AudioTokens != 4 ||
		done.OutputModalities[0] != "audio" || done.Output[0].AsRealtimeConversationItemAssistantMessage().Content[0].Type != "output_audio" {
		t.Errorf("%d audio and %d transcript deltas; response %s", audio, transcript, done.RawJSON())
	}
}

func TestRealtimeCancel(t *testing.T) {
	noLeaks(t)
	// The chunk delay is so long that the response is still streaming when cancelled.
	_, url := start(t, Options{ChunkDelay: time.Hour})
	c, _ := dial(t, url, "?model=m")
	c.next()
	c.send(itemEvent("hi"))
	c.until("conversation.item.done")
	c.send(`{"type":"response.create"}`)
	c.until("response.output_text.delta")
	c.send(`{"type":"response.create","event_id":"evt_again"}`)
	if ev, _ := c.next(); ev.AsRealtimeErrorEvent().Error.Code != "conversation_already_has_active_response" {
		t.Errorf("a second response.create: %s", ev.RawJSON())
	}
	c.send(`{"type":"response.cancel"}`)
	ev, _ := c.next()
	done := ev.AsResponseDoneEvent().Response
	if ev.Type != "response.done" || done.Status != "cancelled" || done.Output[0].AsRealtimeConversationItemAssistantMessage().Status != "incomplete" ||
		done.Usage.OutputTokens != 1 {
		t.Errorf("after the cancel: %s", ev.RawJSON())
	}
	checkUsage(t, done.Usage)
	c.send(`{"type":"response.cancel"}`)
	if ev, _ := c.next(); ev.AsRealtimeErrorEvent().Error.Code != "response_cancel_not_active" {
		t.Errorf("a second cancel: %s", ev.RawJSON())
	}
}

func TestRealtimeDirectives(t *testing.T) {
	noLeaks(t)
	_, url := start(t, Options{})
	t.Run("cut drops the connection without a close frame", func(t *testing.T) {
		c, _ := dial(t, url, "?model=m")
		c.next()
		c.send(itemEvent("go #sim:cut"))
		c.until("conversation.item.done")
		c.send(`{"type":"response.create"}`)
		deltas := 0
		for {
			_ = c.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, data, err := c.ws.ReadMessage()
			if err != nil {
				if !websocket.IsCloseError(err, websocket.CloseAbnormalClosure) {
					t.Errorf("want an abnormal closure (no close frame), got %v", err)
				}
				break
			}
			if bytes.Contains(data, []byte(`"response.done"`)) {
				t.Fatal("response.done arrived despite the cut")
			}
			if bytes.Contains(data, []byte(`"response.output_text.delta"`)) {
				deltas++
			}
		}
		if deltas != 6 { // half of the 12 words
			t.Errorf("%d deltas before the cut", deltas)
		}
	})
	t.Run("close sends a close frame after response.created", func(t *testing.T) {
		c, _ := dial(t, url, "?model=m")
		c.next()
		c.send(itemEvent("go #sim:close=4001"))
		c.until("conversation.item.done")
		c.send(`{"type":"response.create"}`)
		c.until("response.created")
		_, _, err := c.ws.ReadMessage()
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != 4001 || ce.Text != "simulated close" {
			t.Errorf("want close 4001, got %v", err)
		}
	})
	t.Run("fail ends the response with status failed", func(t *testing.T) {
		c, _ := dial(t, url, "?model=m")
		c.next()
		c.send(itemEvent("go #sim:fail=500"))
		c.until("conversation.item.done")
		c.send(`{"type":"response.create"}`)
		evs := c.until("response.done")
		if done := evs[len(evs)-1].AsResponseDoneEvent().Response; len(evs) != 2 || done.Status != "failed" || len(done.Output) != 0 {
			t.Errorf("failed response: %s", evs[len(evs)-1].RawJSON())
		}
	})
}

func TestRealtimeFrames(t *testing.T) {
	noLeaks(t)
	_, url := start(t, Options{})
	c, _ := dial(t, url, "?model=m")
	c.next()
	// A binary frame comes back as it went.
	payload := []byte{0, 1, 2, 0xff, 'x'}
	if err := c.ws.WriteMessage(websocket.BinaryMessage, payload); err != nil {
		t.Fatal(err)
	}
	_ = c.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	typ, data, err := c.ws.ReadMessage()
	if err != nil || typ != websocket.BinaryMessage || !bytes.Equal(data, payload) {
		t.Errorf("echo: type %d, % x, %v", typ, data, err)
	}
	// A ping is answered with a pong carrying its data.
	pong := make(chan string, 1)
	c.ws.SetPongHandler(func(s string) error { pong <- s; return nil })
	if err := c.ws.WriteControl(websocket.PingMessage, []byte("are you there"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	c.send(`{"type":"input_audio_buffer.clear"}`)
	c.next() // pongs are handled while reading
	select {
	case s := <-pong:
		if s != "are you there" {
			t.Errorf("pong %q", s)
		}
	default:
		t.Error("no pong before the next event")
	}
	// The client closing ends the session (noLeaks checks the goroutines are gone).
	_ = c.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"))
	_, _, err = c.ws.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Errorf("the close handshake: %v", err)
	}
}

func TestRealtimeHandshake(t *testing.T) {
	noLeaks(t)
	_, url := start(t, Options{})
	_, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(url, "http")+"/v1/realtime", nil)
	if !errors.Is(err, websocket.ErrBadHandshake) || resp.StatusCode != 400 {
		t.Fatalf("without a model: %v", err)
	}
	resp.Body.Close()
	status, _, raw, _ := post(t, url, "/v1/realtime?model=m", `{}`)
	if status != 400 || !strings.Contains(string(raw), `"type":"invalid_request_error"`) {
		t.Errorf("a POST: %d %s", status, raw)
	}
	http.DefaultClient.CloseIdleConnections()
}
