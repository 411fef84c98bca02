package simulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// GET /v1/realtime?model=<m>: the GA realtime protocol over a WebSocket. The session starts
// with session.created; client events are answered in order (see handle); response.create
// streams an assistant message whose words and usage derive from the latest user text, paced
// like the HTTP streams (Options.FirstByteDelay before response.created, Options.ChunkDelay
// between words, #sim:delay and #sim:stall), and a response in progress can be cancelled.
// There is no voice activity detection: turn_detection is null and responses start only on
// response.create.

// writeTimeout bounds one frame write, so that a client that stops reading cannot hold the
// connection's goroutines forever.
const writeTimeout = 30 * time.Second

// closeWait bounds the wait for the client's close frame after the simulator sent its own.
const closeWait = 2 * time.Second

var upgrader = websocket.Upgrader{
	// Browsers offer the key in a subprotocol and abort unless the answer names "realtime".
	Subprotocols: []string{"realtime"},
	// Tests and the demo connect from any origin.
	CheckOrigin: func(*http.Request) bool { return true },
	Error: func(w http.ResponseWriter, _ *http.Request, status int, reason error) {
		writeError(w, protoOpenAI, status, reason.Error())
	},
}

// serveRealtime checks the handshake, upgrades and runs the session until either side closes.
func (s *Simulator) serveRealtime(w http.ResponseWriter, r *http.Request) {
	s.record(r, nil)
	q := r.URL.Query()
	model := q.Get("model")
	if model == "" && q.Get("call_id") == "" {
		missingParam(w, "model")
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered
	}
	ws.SetReadLimit(maxBody)
	c := &rtConn{sim: s, ws: ws, model: model}
	c.session = defaultSession(model, s.o.Now())
	c.serve()
}

// rtFrame is one data frame from the client.
type rtFrame struct {
	binary bool
	data   []byte
}

// rtConn is one realtime session. Only the goroutine running serve writes data frames; the
// reader goroutine hands frames over on a channel (and answers pings, which gorilla allows
// concurrently).
type rtConn struct {
	sim     *Simulator
	ws      *websocket.Conn
	model   string
	session orderedMap[json.RawMessage]

	seq      int // server events sent
	ids      int // items and responses created
	items    []rtItem
	audio    int    // bytes in the input audio buffer
	lastUser string // text of the latest user item: the seed and the directives
	resp     *rtResponse
	closing  bool // a close frame was sent; wait for the client's
}

func (c *rtConn) serve() {
	in := make(chan rtFrame)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.read(in, stop)
	}()
	c.run(in)
	if c.closing {
		c.drain(in)
	}
	close(stop)
	_ = c.ws.Close()
	wg.Wait()
}

// read passes the client's data frames to in until the connection fails or stop is closed.
func (c *rtConn) read(in chan<- rtFrame, stop <-chan struct{}) {
	defer close(in)
	for {
		typ, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		select {
		case in <- rtFrame{typ == websocket.BinaryMessage, data}:
		case <-stop:
			return
		}
	}
}

// drain waits, a bounded time, for the client to answer the close frame.
func (c *rtConn) drain(in <-chan rtFrame) {
	t := time.NewTimer(closeWait)
	defer t.Stop()
	for {
		select {
		case _, ok := <-in:
			if !ok {
				return
			}
		case <-t.C:
			return
		}
	}
}

// run sends session.created, then answers client frames and advances the response in
// progress, until the client leaves or the simulator ends the connection.
func (c *rtConn) run(in <-chan rtFrame) {
	if !c.emit("session.created", struct {
		Session orderedMap[json.RawMessage] `json:"session"`
	}{c.session}) {
		return
	}
	for {
		var tick <-chan time.Time
		if c.resp != nil && c.resp.timer != nil {
			tick = c.resp.timer.C
		}
		select {
		case f, ok := <-in:
			if !ok {
				c.stopResponse()
				return
			}
			if !c.handle(f) {
				c.stopResponse()
				return
			}
		case <-tick:
			if !c.advance() {
				return
			}
		}
	}
}

// emit sends one server event: type and event_id first, then the fields of body.
func (c *rtConn) emit(typ string, body any) bool {
	c.seq++
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"type":%s,"event_id":"event_%04d"`, mustJSON(typ), c.seq)
	if rest := mustJSON(body); len(rest) > 2 {
		b.WriteByte(',')
		b.Write(rest[1:])
	} else {
		b.WriteByte('}')
	}
	return c.write(websocket.TextMessage, b.Bytes())
}

func (c *rtConn) write(typ int, data []byte) bool {
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	return c.ws.WriteMessage(typ, data) == nil
}

// rtError is the error object of an error event.
type rtError struct {
	Type    string  `json:"type"`
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	EventID *string `json:"event_id"`
}

// fail sends an error event about the client event eventID; the session goes on.
func (c *rtConn) fail(eventID, code, msg string) bool {
	e := rtError{Type: "invalid_request_error", Code: code, Message: msg}
	if eventID != "" {
		e.EventID = &eventID
	}
	return c.emit("error", struct {
		Error rtError `json:"error"`
	}{e})
}

// nextID numbers the items and responses of the session.
func (c *rtConn) nextID(prefix string) string {
	c.ids++
	return fmt.Sprintf("%s_sim%04d", prefix, c.ids)
}

// rtClientEvent holds the fields of every client event the simulator reads.
type rtClientEvent struct {
	Type     string          `json:"type"`
	EventID  string          `json:"event_id"`
	Session  json.RawMessage `json:"session"`
	Item     json.RawMessage `json:"item"`
	ItemID   string          `json:"item_id"`
	Audio    string          `json:"audio"`
	Response json.RawMessage `json:"response"`
}

// handle answers one client frame; false ends the connection.
func (c *rtConn) handle(f rtFrame) bool {
	if f.binary {
		return c.write(websocket.BinaryMessage, f.data)
	}
	var ev rtClientEvent
	if err := json.Unmarshal(f.data, &ev); err != nil {
		return c.fail("", "invalid_json", "The event is not valid JSON: "+err.Error())
	}
	switch ev.Type {
	case "session.update":
		return c.updateSession(ev)
	case "conversation.item.create":
		return c.createItem(ev)
	case "conversation.item.retrieve", "conversation.item.delete":
		return c.itemByID(ev)
	case "input_audio_buffer.append":
		return c.appendAudio(ev)
	case "input_audio_buffer.commit":
		return c.commitAudio(ev)
	case "input_audio_buffer.clear":
		c.audio = 0
		return c.emit("input_audio_buffer.cleared", struct{}{})
	case "response.create":
		if c.resp != nil {
			return c.fail(ev.EventID, "conversation_already_has_active_response",
				"Conversation already has an active response in progress: "+c.resp.id+".")
		}
		return c.startResponse(ev)
	case "response.cancel":
		if c.resp == nil {
			return c.fail(ev.EventID, "response_cancel_not_active", "Cancellation failed: no active response found.")
		}
		return c.cancelResponse()
	}
	return c.fail(ev.EventID, "invalid_value", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'session.update', "+
		"'input_audio_buffer.append', 'input_audio_buffer.commit', 'input_audio_buffer.clear', 'conversation.item.create', "+
		"'conversation.item.retrieve', 'conversation.item.delete', 'response.create' and 'response.cancel'.", ev.Type))
}

// defaultSession is the session a connection starts with.
func defaultSession(model string, now time.Time) orderedMap[json.RawMessage] {
	raw := func(v any) json.RawMessage { return mustJSON(v) }
	return orderedMap[json.RawMessage]{
		{"type", raw("realtime")},
		{"object", raw("realtime.session")},
		{"id", raw(fmt.Sprintf("sess_sim%08x", hash64(model)))},
		{"model", raw(model)},
		{"output_modalities", raw([]string{"text"})},
		{"instructions", raw("")},
		{"tools", raw([]any{})},
		{"tool_choice", raw("auto")},
		{"max_output_tokens", raw("inf")},
		{"tracing", raw(nil)},
		{"prompt", raw(nil)},
		{"expires_at", raw(now.Add(time.Hour).Unix())},
		{"audio", json.RawMessage(`{"input":{"format":{"type":"audio/pcm","rate":24000},"transcription":null,` +
			`"noise_reduction":null,"turn_detection":null},"output":{"format":{"type":"audio/pcm","rate":24000},"voice":"alloy","speed":1}}`)},
		{"include", raw(nil)},
	}
}

// objectEntries reads a JSON object's members in order.
func objectEntries(raw json.RawMessage) (orderedMap[json.RawMessage], error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("expected a JSON object")
	}
	var out orderedMap[json.RawMessage]
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		out = out.set(t.(string), v)
	}
	if _, err := d.Token(); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return out, nil
}

// set replaces the value of key, or appends it.
func (m orderedMap[V]) set(key string, v V) orderedMap[V] {
	for i := range m {
		if m[i].key == key {
			m[i].val = v
			return m
		}
	}
	return append(m, entry[V]{key, v})
}

// get returns the value of key and whether it is present.
func (m orderedMap[V]) get(key string) (V, bool) {
	for _, e := range m {
		if e.key == key {
			return e.val, true
		}
	}
	var zero V
	return zero, false
}

// updateSession merges the fields sent into the session, model included, and echoes it.
func (c *rtConn) updateSession(ev rtClientEvent) bool {
	update, err := objectEntries(ev.Session)
	if err != nil {
		return c.fail(ev.EventID, "invalid_value", "Invalid 'session': expected an object.")
	}
	for _, e := range update {
		if e.key != "id" && e.key != "object" {
			c.session = c.session.set(e.key, e.val)
		}
	}
	return c.emit("session.updated", struct {
		Session orderedMap[json.RawMessage] `json:"session"`
	}{c.session})
}

// audioOutput tells whether the session answers with audio.
func (c *rtConn) audioOutput() bool {
	raw, _ := c.session.get("output_modalities")
	var m []string
	_ = json.Unmarshal(raw, &m)
	for _, v := range m {
		if v == "audio" {
			return true
		}
	}
	return false
}

// instructions is the session's system text.
func (c *rtConn) instructions() string {
	raw, _ := c.session.get("instructions")
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}
