package gatewaytest

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/shopspring/decimal"

	"modelgateway/core/simulator"
)

// MediaCatalog: the media tests run the gateway against the simulator's embedding, ranking, moderation,
// image and audio routes, each model priced the way such a model is sold.
const MediaCatalog = `{
  "currency": "RUB",
  "families": [{"id": "media"}],
  "providers": [
    {"id": "up-openai", "kind": "openai", "base_url": "{{UP}}/v1", "api_key_env": "UP_KEY"},
    {"id": "up-gemini", "kind": "gemini", "base_url": "{{UP}}", "api_key_env": "UP_KEY"},
    {"id": "up-rerank", "kind": "rerank", "base_url": "{{UP}}/v1", "api_key_env": "UP_KEY"}
  ],
  "models": [
    {"id": "e-openai", "family": "media", "routes": [{"endpoint_families": ["embeddings", "content.embed"], "provider": "up-openai", "upstream_model": "text-embedding-3-small"}],
     "prices": [{"endpoint_families": ["embeddings", "content.embed"], "billing_mode": "per_token", "input": "1000"}]},
    {"id": "e-gemini", "family": "media", "routes": [{"endpoint_families": ["embeddings", "content.embed"], "provider": "up-gemini", "upstream_model": "text-embedding-004"}],
     "prices": [{"endpoint_families": ["embeddings", "content.embed"], "billing_mode": "per_token", "input": "1000"}]},
    {"id": "r-rerank", "family": "media", "routes": [{"endpoint_families": ["rerank"], "provider": "up-rerank", "upstream_model": "rerank-v3.5"}],
     "prices": [{"endpoint_families": ["rerank"], "billing_mode": "per_token", "input": "1000"}]},
    {"id": "mod", "family": "media", "routes": [{"endpoint_families": ["moderations"], "provider": "up-openai", "upstream_model": "omni-moderation-latest"}],
     "prices": [{"endpoint_families": ["moderations"], "billing_mode": "per_request", "request": "0"}]},
    {"id": "img", "family": "media", "routes": [{"endpoint_families": ["images.generations", "images.edits"], "provider": "up-openai", "upstream_model": "gpt-image-1"}],
     "prices": [{"endpoint_families": ["images.generations", "images.edits"], "billing_mode": "per_token", "input": "10", "output": "40"}]},
    {"id": "dalle", "family": "media", "routes": [{"endpoint_families": ["images.generations", "images.variations"], "provider": "up-openai", "upstream_model": "dall-e-2"}],
     "prices": [{"endpoint_families": ["images.generations", "images.variations"], "billing_mode": "per_request", "request": "3"}]},
    {"id": "tts", "family": "media", "routes": [{"endpoint_families": ["audio.speech"], "provider": "up-openai", "upstream_model": "tts-1"}],
     "prices": [{"endpoint_families": ["audio.speech"], "billing_mode": "per_request", "request": "1.5"}]},
    {"id": "stt", "family": "media", "routes": [{"endpoint_families": ["audio.transcriptions"], "provider": "up-openai", "upstream_model": "gpt-4o-transcribe"}],
     "prices": [{"endpoint_families": ["audio.transcriptions"], "billing_mode": "per_token", "input": "100", "output": "400"}]},
    {"id": "whisper", "family": "media", "routes": [{"endpoint_families": ["audio.transcriptions", "audio.translations"], "provider": "up-openai", "upstream_model": "whisper-1"}],
     "prices": [{"endpoint_families": ["audio.transcriptions", "audio.translations"], "billing_mode": "per_request", "request": "0.25"}]},
    {"id": "rt", "family": "media", "routes": [{"endpoint_families": ["realtime"], "provider": "up-openai", "upstream_model": "gpt-realtime"}],
     "prices": [{"endpoint_families": ["realtime"], "billing_mode": "per_token", "input": "100", "cached_input": "10", "output": "400", "audio_input": "800", "audio_output": "1600"}]},
    {"id": "rt-dear", "family": "media", "routes": [{"endpoint_families": ["realtime"], "provider": "up-openai", "upstream_model": "gpt-realtime"}],
     "prices": [{"endpoint_families": ["realtime"], "billing_mode": "per_token", "input": "0", "output": "100000"}]},
    {"id": "unpriced", "family": "media", "routes": [{"endpoint_families": ["images.generations"], "provider": "up-openai", "upstream_model": "dall-e-3"}]}
  ]
}`

// StartMedia starts the upstream and a replica (options o), applies MediaCatalog ({{UP}} is the
// upstream) and makes a profile with 1000 of credit.
func StartMedia(t testing.TB, o Options) *Gen {
	t.Helper()
	up := StartUpstream(t, simulator.Options{})
	g := &Gen{Gateway: Start(t, o), Up: up}
	g.Admin("POST", "/admin/v1/catalog:apply", strings.ReplaceAll(MediaCatalog, "{{UP}}", up.URL))
	g.Key, g.ProfileID = g.NewProfile("media", "1000")
	return g
}

var perMillion = decimal.New(1, -6)

// Cost is tokens at a price per 1M tokens.
func Cost(tokens int64, per1M string) decimal.Decimal {
	return decimal.NewFromInt(tokens).Mul(decimal.RequireFromString(per1M)).Mul(perMillion)
}

// DialRealtime opens a realtime session on the gateway at base (http://...) as a server-side
// client does (key in the header).
func DialRealtime(base, model string, h http.Header) (*websocket.Conn, *http.Response, error) {
	url := "ws" + strings.TrimPrefix(base, "http") + "/v1/realtime?model=" + model
	return websocket.DefaultDialer.Dial(url, h)
}

// DialRealtime opens a session with the profile's key when h is nil.
func (g *Gen) DialRealtime(t testing.TB, model string, h http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	if h == nil {
		h = http.Header{"Authorization": {"Bearer " + g.Key}}
	}
	return DialRealtime(g.Base, model, h)
}

// Event reads the next text frame as a JSON event.
func Event(t testing.TB, c *websocket.Conn) map[string]any {
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

// Until reads events until one of type typ.
func Until(t testing.TB, c *websocket.Conn, typ string) map[string]any {
	t.Helper()
	for {
		if ev := Event(t, c); ev["type"] == typ {
			return ev
		}
	}
}

// Send writes one text event.
func Send(t testing.TB, c *websocket.Conn, ev string) {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(ev)); err != nil {
		t.Fatal(err)
	}
}

// Ask adds a user message and asks for a response.
func Ask(t testing.TB, c *websocket.Conn, text string) {
	t.Helper()
	Send(t, c, `{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"`+text+`"}]}}`)
	Send(t, c, `{"type":"response.create"}`)
}

// RealtimeCost prices a response.done's usage: text and audio at their own rates, cache reads
// at the cached rate.
func RealtimeCost(t testing.TB, done map[string]any, in, cached, out, audioIn, audioOut string) decimal.Decimal {
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
	return Cost(text, in).Add(Cost(aIn, audioIn)).Add(Cost(c, cached)).Add(Cost(n(u, "output_tokens")-aOut, out)).Add(Cost(aOut, audioOut))
}

// FormOfSize is a transcription form of exactly n bytes; modelFirst puts the model before the
// file, as curl -F does when written that way; the SDKs put it after.
func FormOfSize(t testing.TB, n int, modelFirst bool) (body []byte, contentType string) {
	t.Helper()
	build := func(fileSize int) ([]byte, string) {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		_ = w.SetBoundary("limitboundary")
		if modelFirst {
			_ = w.WriteField("model", "whisper")
		}
		f, _ := w.CreateFormFile("file", "big.wav")
		_, _ = f.Write(bytes.Repeat([]byte{'a'}, fileSize))
		if !modelFirst {
			_ = w.WriteField("model", "whisper")
		}
		_ = w.Close()
		return b.Bytes(), w.FormDataContentType()
	}
	probe, _ := build(0)
	body, contentType = build(n - len(probe))
	if len(body) != n {
		t.Fatalf("form of %d bytes, want %d", len(body), n)
	}
	return body, contentType
}

// CloseOf reads until the session's close frame, within bound.
func CloseOf(t testing.TB, c *websocket.Conn, within time.Duration) *websocket.CloseError {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(within))
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if !errors.As(err, &ce) {
			t.Fatalf("no close frame within %v: %v", within, err)
		}
		return ce
	}
}
