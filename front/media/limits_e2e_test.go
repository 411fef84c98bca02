package media_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"modelgateway/core/gatewaytest"
)

var sent int

// sendRaw posts body with a content type, with a Content-Length or chunked.
func sendRaw(t *testing.T, g *gatewaytest.Gen, path, contentType string, body []byte, chunked bool) (int, []byte) {
	t.Helper()
	var rd io.Reader = bytes.NewReader(body)
	if chunked {
		rd = io.MultiReader(rd) // hides the length: the client sends it chunked
	}
	req, err := http.NewRequest("POST", g.Base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+g.Key)
	sent++
	req.Header.Set("X-Request-Id", fmt.Sprintf("limits-%d", sent))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

// jsonOfSize is a valid JSON body of exactly n bytes.
func jsonOfSize(t *testing.T, prefix string, n int) []byte {
	t.Helper()
	b := []byte(prefix + `,"user":"`)
	pad := n - len(b) - 2
	if pad < 0 {
		t.Fatal("size too small")
	}
	return append(append(b, bytes.Repeat([]byte("u"), pad)...), '"', '}')
}

// Body limits are decided while reading, exactly at the boundary, with or without a declared
// length; an oversized body changes nothing and, when the model came after the file, reaches
// no upstream at all.
func TestMediaBodyLimits(t *testing.T) {
	g := gatewaytest.StartMedia(t, gatewaytest.Options{})
	const jsonLimit, formLimit = 1 << 20, 25 << 20
	type sized struct {
		name        string
		path        string
		contentType string
		body        func(n int) []byte
		limit       int
	}
	var formType string
	routes := []sized{
		{"images json", "/v1/images/generations", "application/json", func(n int) []byte {
			return jsonOfSize(t, `{"model":"dalle","prompt":"a cat"`, n)
		}, jsonLimit},
		{"transcription form", "/v1/audio/transcriptions", "", func(n int) []byte {
			b, ct := gatewaytest.FormOfSize(t, n, false)
			formType = ct
			return b
		}, formLimit},
	}
	charges := 0
	for _, r := range routes {
		for _, chunked := range []bool{false, true} {
			for _, delta := range []int{-1, 0, 1} {
				body := r.body(r.limit + delta)
				ct := r.contentType
				if ct == "" {
					ct = formType
				}
				before := len(g.Up.Calls())
				status, raw := sendRaw(t, g, r.path, ct, body, chunked)
				if delta <= 0 {
					if status != 200 {
						t.Errorf("%s chunked=%v at limit%+d: %d %s", r.name, chunked, delta, status, raw)
					}
					charges++
					continue
				}
				if status != http.StatusRequestEntityTooLarge {
					t.Fatalf("%s chunked=%v at limit+1: %d %.200s", r.name, chunked, status, raw)
				}
				if code, _, id := gatewaytest.Envelope(t, raw); code != "payload_too_large" || !strings.HasPrefix(id, "limits-") {
					t.Errorf("%s: code %s, request id %q", r.name, code, id)
				}
				if after := len(g.Up.Calls()); after != before {
					t.Errorf("%s chunked=%v: an oversized body reached the upstream", r.name, chunked)
				}
			}
		}
	}
	gatewaytest.Settled(t, g.Pool(), g.ProfileID, charges)

	// Model first, chunked: the upload is already streaming upstream when it passes the
	// limit; the client still gets payload_too_large and nothing is charged.
	body, ct := gatewaytest.FormOfSize(t, formLimit+1, true)
	if status, raw := sendRaw(t, g, "/v1/audio/transcriptions", ct, body, true); status != http.StatusRequestEntityTooLarge {
		t.Fatalf("streamed oversized upload: %d %.200s", status, raw)
	}
	gatewaytest.Settled(t, g.Pool(), g.ProfileID, charges)
}

// Wrong content types, streaming requests, missing prices: the spec code, the request id, no
// upstream call and no charge; a bad key wins over everything.
func TestMediaRefusals(t *testing.T) {
	g := gatewaytest.StartMedia(t, gatewaytest.Options{})
	cases := []struct {
		name, path, contentType, body, key, code string
	}{
		{"json route, text body", "/v1/images/generations", "text/plain", `{"model":"dalle","prompt":"x"}`, "", "unsupported_content_type"},
		{"multipart route, json body", "/v1/audio/transcriptions", "application/json", `{"model":"whisper"}`, "", "unsupported_content_type"},
		{"bad key wins", "/v1/audio/transcriptions", "application/json", `{}`, "nope", "invalid_key"},
		{"image stream", "/v1/images/generations", "application/json", `{"model":"dalle","prompt":"x","stream":true}`, "", "streaming_not_supported"},
		{"speech sse", "/v1/audio/speech", "application/json", `{"model":"tts","input":"x","voice":"alloy","stream_format":"sse"}`, "", "streaming_not_supported"},
		{"embeddings stream", "/v1/embeddings", "application/json", `{"model":"e-openai","input":"x","stream":true}`, "", "streaming_not_supported"},
		{"no price", "/v1/images/generations", "application/json", `{"model":"unpriced","prompt":"x"}`, "", "pricing_unavailable"},
		{"no model", "/v1/images/generations", "application/json", `{"prompt":"x"}`, "", "invalid_request_error"},
		{"model not allowed on route", "/v1/audio/speech", "application/json", `{"model":"dalle","input":"x","voice":"alloy"}`, "", "model_not_found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(g.Up.Calls())
			key := g.Key
			if c.key != "" {
				key = c.key
			}
			rid := "refused-" + strings.ReplaceAll(c.name, " ", "-")
			status, _, raw := g.Post(c.path, map[string]string{"Content-Type": c.contentType, "Authorization": "Bearer " + key, "X-Request-Id": rid}, c.body)
			code, _, id := gatewaytest.Envelope(t, raw)
			if code != c.code || id != rid {
				t.Errorf("got %d %s (id %q), want %s", status, code, id, c.code)
			}
			if len(g.Up.Calls()) != before {
				t.Error("the upstream was called")
			}
		})
	}
	if b, sum, n := gatewaytest.LedgerOf(t, g.Pool(), g.ProfileID); n != 0 || !b.Equal(sum) || b.String() != "1000" {
		t.Errorf("balance %s, entries sum %s, %d charges: refusals must change nothing", b, sum, n)
	}
}
