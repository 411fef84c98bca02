package simulator

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// A realtime response: one assistant message of one content part, text or audio, streamed a
// word per delta. Its usage counts the whole conversation as input (a quarter token per text
// byte, ten tokens per second of audio, 85 per image; #sim:cache=<n> marks n of them cached,
// text first) and one output token per word, plus one audio token per word when it speaks.

// rtStep is one stage of a response: what to wait before it, and what it does.
type rtStep struct {
	wait time.Duration
	do   func() bool // false ends the connection
}

type rtResponse struct {
	id, itemID string
	a          *answer
	audio      bool
	words      []string // the text, one word with its leading space per delta
	sent       int      // words streamed so far
	itemAdded  bool     // response.output_item.added went out

	textIn, audioIn, imageIn int

	steps  []rtStep
	next   int
	timer  *time.Timer // set while waiting before the next step
	waited bool        // the wait before steps[next] is over
}

type rtCachedDetails struct {
	TextTokens  int `json:"text_tokens"`
	AudioTokens int `json:"audio_tokens"`
	ImageTokens int `json:"image_tokens"`
}

type rtInputDetails struct {
	CachedTokens        int             `json:"cached_tokens"`
	TextTokens          int             `json:"text_tokens"`
	AudioTokens         int             `json:"audio_tokens"`
	ImageTokens         int             `json:"image_tokens"`
	CachedTokensDetails rtCachedDetails `json:"cached_tokens_details"`
}

type rtOutputDetails struct {
	TextTokens  int `json:"text_tokens"`
	AudioTokens int `json:"audio_tokens"`
}

type rtUsage struct {
	TotalTokens        int             `json:"total_tokens"`
	InputTokens        int             `json:"input_tokens"`
	OutputTokens       int             `json:"output_tokens"`
	InputTokenDetails  rtInputDetails  `json:"input_token_details"`
	OutputTokenDetails rtOutputDetails `json:"output_token_details"`
}

// usage is the usage of the response once it has streamed its first words words.
func (r *rtResponse) usage(words int) *rtUsage {
	u := &rtUsage{}
	in := &u.InputTokenDetails
	in.TextTokens, in.AudioTokens, in.ImageTokens = r.textIn, r.audioIn, r.imageIn
	u.InputTokens = r.textIn + r.audioIn + r.imageIn
	// input_tokens includes the cached ones; they are served text first.
	left := min(r.a.d.cache, u.InputTokens)
	in.CachedTokens = left
	for _, c := range []struct {
		from int
		to   *int
	}{
		{r.textIn, &in.CachedTokensDetails.TextTokens},
		{r.audioIn, &in.CachedTokensDetails.AudioTokens},
		{r.imageIn, &in.CachedTokensDetails.ImageTokens},
	} {
		*c.to = min(left, c.from)
		left -= *c.to
	}
	u.OutputTokenDetails.TextTokens = words
	if r.audio {
		u.OutputTokenDetails.AudioTokens = words
	}
	u.OutputTokens = u.OutputTokenDetails.TextTokens + u.OutputTokenDetails.AudioTokens
	u.TotalTokens = u.InputTokens + u.OutputTokens
	return u
}

// rtPart is a content part: type text/audio in content_part events, output_text/output_audio
// in items.
type rtPart struct {
	Type       string  `json:"type"`
	Text       *string `json:"text,omitempty"`
	Transcript *string `json:"transcript,omitempty"`
}

func (r *rtResponse) part(text string, inItem bool) rtPart {
	switch {
	case r.audio && inItem:
		return rtPart{Type: "output_audio", Transcript: &text}
	case r.audio:
		return rtPart{Type: "audio", Transcript: &text}
	case inItem:
		return rtPart{Type: "output_text", Text: &text}
	}
	return rtPart{Type: "text", Text: &text}
}

func (r *rtResponse) sentText() string { return strings.Join(r.words[:r.sent], "") }

type rtOutputItem struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Type    string   `json:"type"`
	Status  string   `json:"status"`
	Role    string   `json:"role"`
	Content []rtPart `json:"content"`
}

// item is the assistant message: empty while in progress, then with the text streamed.
func (r *rtResponse) item(status string) rtOutputItem {
	it := rtOutputItem{ID: r.itemID, Object: "realtime.item", Type: "message", Status: status, Role: "assistant", Content: []rtPart{}}
	if status != "in_progress" {
		it.Content = []rtPart{r.part(r.sentText(), true)}
	}
	return it
}

type rtResponseObject struct {
	ID               string          `json:"id"`
	Object           string          `json:"object"`
	Status           string          `json:"status"`
	StatusDetails    any             `json:"status_details"`
	Output           []rtOutputItem  `json:"output"`
	ConversationID   string          `json:"conversation_id"`
	OutputModalities []string        `json:"output_modalities"`
	MaxOutputTokens  string          `json:"max_output_tokens"`
	Audio            json.RawMessage `json:"audio"`
	Usage            *rtUsage        `json:"usage"`
	Metadata         any             `json:"metadata"`
}

func (c *rtConn) responseObject(r *rtResponse, status string, details any, output []rtOutputItem, u *rtUsage) rtResponseObject {
	modalities := []string{"text"}
	if r.audio {
		modalities = []string{"audio"}
	}
	return rtResponseObject{
		ID: r.id, Object: "realtime.response", Status: status, StatusDetails: details,
		Output: append([]rtOutputItem{}, output...), ConversationID: fmt.Sprintf("conv_sim%08x", hash64(c.model)),
		OutputModalities: modalities, MaxOutputTokens: "inf",
		Audio: json.RawMessage(`{"output":{"format":{"type":"audio/pcm","rate":24000},"voice":"alloy"}}`),
		Usage: u,
	}
}

// rtPartRef locates a content part in the events that stream it.
type rtPartRef struct {
	ResponseID   string `json:"response_id"`
	ItemID       string `json:"item_id"`
	OutputIndex  int    `json:"output_index"`
	ContentIndex int    `json:"content_index"`
}

// startResponse plans a response from the conversation and sends its first events.
func (c *rtConn) startResponse(ev rtClientEvent) bool {
	var override struct {
		OutputModalities []string `json:"output_modalities"`
		Instructions     *string  `json:"instructions"`
	}
	if len(ev.Response) > 0 {
		_ = json.Unmarshal(ev.Response, &override)
	}
	instructions := c.instructions()
	if override.Instructions != nil {
		instructions = *override.Instructions
	}
	textBytes := len(instructions)
	r := &rtResponse{id: c.nextID("resp"), itemID: c.nextID("item")}
	for _, it := range c.items {
		textBytes += len(it.text)
		r.audioIn += it.audioTokens
		r.imageIn += it.imageTokens
	}
	r.a = plan(&convo{lastUser: c.lastUser, textBytes: textBytes}, c.sim.o.Words)
	r.textIn, r.words = r.a.input, r.a.text
	if r.a.d.respID != "" {
		// A misbehaving upstream that repeats a response id.
		r.id = r.a.d.respID
	}
	r.audio = c.audioOutput() || r.a.d.audio
	if override.OutputModalities != nil {
		r.audio = slices.Contains(override.OutputModalities, "audio") || r.a.d.audio
	}
	r.steps = c.responseSteps(r)
	c.resp = r
	return c.advance()
}

// responseSteps lists the events of a response, with the directives applied.
func (c *rtConn) responseSteps(r *rtResponse) []rtStep {
	var steps []rtStep
	add := func(wait time.Duration, do func() bool) { steps = append(steps, rtStep{wait, do}) }
	ref := rtPartRef{ResponseID: r.id, ItemID: r.itemID}
	o, d := c.sim.o, r.a.d
	// The first byte delay holds response.created; the words are ChunkDelay apart, and a
	// stall holds the second one.
	add(o.FirstByteDelay+d.delay, func() bool {
		return c.emit("response.created", struct {
			Response rtResponseObject `json:"response"`
		}{c.responseObject(r, "in_progress", nil, nil, nil)})
	})
	switch {
	case d.close != 0:
		add(0, func() bool { return c.closeWith(d.close) })
		return steps
	case d.fail != 0:
		add(0, func() bool { return c.finish(r, "failed") })
		return steps
	}
	add(0, func() bool {
		r.itemAdded = true
		return c.emit("response.output_item.added", struct {
			ResponseID  string       `json:"response_id"`
			OutputIndex int          `json:"output_index"`
			Item        rtOutputItem `json:"item"`
		}{r.id, 0, r.item("in_progress")})
	})
	add(0, func() bool {
		return c.emit("response.content_part.added", struct {
			rtPartRef
			Part rtPart `json:"part"`
		}{ref, r.part("", false)})
	})
	cutAt := -1 // #sim:cut drops the connection half way through the words
	if d.cut {
		cutAt = min(max(1, len(r.words)/2), len(r.words))
	}
	for i, w := range r.words {
		if i == cutAt {
			add(0, c.cut)
		}
		var wait time.Duration
		switch {
		case i == 1:
			wait = o.ChunkDelay + d.stall
		case i > 1:
			wait = o.ChunkDelay
		}
		add(wait, func() bool { return c.delta(r, ref, i, w) })
	}
	if cutAt == len(r.words) {
		add(0, c.cut)
	}
	add(0, func() bool {
		if !r.audio {
			return c.emit("response.output_text.done", struct {
				rtPartRef
				Text string `json:"text"`
			}{ref, r.sentText()})
		}
		return c.emit("response.output_audio.done", ref) && c.emit("response.output_audio_transcript.done", struct {
			rtPartRef
			Transcript string `json:"transcript"`
		}{ref, r.sentText()})
	})
	add(0, func() bool {
		return c.emit("response.content_part.done", struct {
			rtPartRef
			Part rtPart `json:"part"`
		}{ref, r.part(r.sentText(), false)})
	})
	add(0, func() bool {
		return c.emit("response.output_item.done", struct {
			ResponseID  string       `json:"response_id"`
			OutputIndex int          `json:"output_index"`
			Item        rtOutputItem `json:"item"`
		}{r.id, 0, r.item("completed")})
	})
	add(0, func() bool { return c.finish(r, "completed") })
	return steps
}

// delta streams word i: a text delta, or a transcript delta and 100 ms of audio.
func (c *rtConn) delta(r *rtResponse, ref rtPartRef, i int, word string) bool {
	r.sent++
	type delta struct {
		rtPartRef
		Delta string `json:"delta"`
	}
	if !r.audio {
		return c.emit("response.output_text.delta", delta{ref, word})
	}
	pcm := tone(r.a.seed, i*audioBytesPerToken/2, audioBytesPerToken)
	return c.emit("response.output_audio_transcript.delta", delta{ref, word}) &&
		c.emit("response.output_audio.delta", delta{ref, base64.StdEncoding.EncodeToString(pcm)})
}

// advance runs the steps of the response in progress until one must wait; run calls it again
// when the wait is over, while it goes on reading client events (a cancel, say).
func (c *rtConn) advance() bool {
	r := c.resp
	for r != nil && c.resp == r && r.next < len(r.steps) {
		st := r.steps[r.next]
		if st.wait > 0 && !r.waited {
			r.timer, r.waited = time.NewTimer(st.wait), true
			return true
		}
		r.timer, r.waited = nil, false
		r.next++
		if !st.do() {
			return false
		}
	}
	return true
}

// stopResponse forgets the response in progress when the connection ends.
func (c *rtConn) stopResponse() {
	if c.resp != nil && c.resp.timer != nil {
		c.resp.timer.Stop()
	}
	c.resp = nil
}

func (c *rtConn) cancelResponse() bool { return c.finish(c.resp, "cancelled") }

// finish ends a response with response.done; what was streamed joins the conversation.
func (c *rtConn) finish(r *rtResponse, status string) bool {
	c.stopResponse()
	var details any
	var output []rtOutputItem
	u := r.usage(r.sent)
	switch status {
	case "completed":
		output = []rtOutputItem{r.item("completed")}
	case "cancelled":
		details = map[string]string{"type": "cancelled", "reason": "client_cancelled"}
		if r.itemAdded {
			output = []rtOutputItem{r.item("incomplete")}
		}
	case "failed":
		e := newOpenAIError(r.a.d.fail, failMessage(r.a.d.fail))
		details = map[string]any{"type": "failed", "error": map[string]any{"type": e.Type, "code": e.Code, "message": e.Message}}
		u = nil
	}
	if len(output) > 0 {
		echo, _ := objectEntries(mustJSON(output[0]))
		it := rtItem{id: r.itemID, echo: echo, text: r.sentText()}
		if r.audio {
			it.audioTokens = r.sent
		}
		c.items = append(c.items, it)
	}
	return c.emit("response.done", struct {
		Response rtResponseObject `json:"response"`
	}{c.responseObject(r, status, details, output, u)})
}

// cut drops the TCP connection without a close frame, as when an upstream dies.
func (c *rtConn) cut() bool {
	_ = c.ws.NetConn().Close()
	return false
}

// closeWith sends a close frame; serve then waits for the client's before closing.
func (c *rtConn) closeWith(code int) bool {
	msg := websocket.FormatCloseMessage(code, "simulated close")
	_ = c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(writeTimeout))
	c.closing = true
	return false
}
