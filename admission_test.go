package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"modelgateway/core/store/storetest"
)

// An upstream that refuses our credentials (401/403) is our fault, not the client's: 502
// upstream_error, never a 400 that would tell the client to fix its request. A 400 of the
// upstream stays 400 and a 429 stays 429, on every upstream kind.
func TestUpstreamStatusesReachTheClientAsTheSpecSays(t *testing.T) {
	g := startGen(t)
	cases := []struct {
		upstream, want int
		code           string
	}{
		{401, 502, "upstream_error"},
		{403, 502, "upstream_error"},
		{400, 400, "upstream_error"},
		{429, 429, "upstream_error"},
		{500, 502, "upstream_error"},
	}
	for _, model := range []string{"m-openai", "m-anthropic", "m-gemini"} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s %d", model, c.upstream), func(t *testing.T) {
				id := fmt.Sprintf("up-%s-%d", model, c.upstream)
				status, _, raw := g.post(t, "/v1/chat/completions", map[string]string{"X-Request-Id": id},
					fmt.Sprintf(`{"model":%q,"max_tokens":5,"messages":[{"role":"user","content":"x #sim:fail=%d"}]}`, model, c.upstream))
				code, _, rid := envelope(t, raw)
				if status != c.want || code != c.code || rid != id {
					t.Errorf("upstream %d answered %d %s (id %q), want %d %s", c.upstream, status, code, rid, c.want, c.code)
				}
			})
		}
	}
}

// inputCatalog prices input at 1 per token and output at nothing, so that a hold is exactly
// the input estimate of the body: bytes/2 + 64 tokens.
const inputCatalog = `{
  "currency": "RUB",
  "families": [{"id": "fam"}],
  "providers": [{"id": "up", "kind": "openai", "base_url": "{{UP}}/v1", "api_key_env": "UP_KEY"}],
  "models": [{"id": "m-in", "family": "fam", "routes": [{"endpoint_families": ["chat.completions"], "provider": "up", "upstream_model": "up-gpt"}],
    "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "1000000", "output": "0"}]}]
}`

// bodyOfSize is a chat request of exactly n bytes.
func bodyOfSize(t *testing.T, n int) string {
	t.Helper()
	head, tail := `{"model":"m-in","max_tokens":1,"messages":[{"role":"user","content":"`, `"}]}`
	pad := n - len(head) - len(tail)
	if pad < 1 {
		t.Fatalf("a body of %d bytes is too small", n)
	}
	words := strings.Repeat("word ", pad/5+1)[:pad]
	return head + words + tail
}

// The input side of a generation hold is half a token per body byte plus 64 (billing
// InputEstimate): with a balance of 500 at 1 per input token, a 900-byte request (hold 514) is
// refused before anything goes upstream and an 860-byte one (hold 494) is served. Halving the
// estimate, or dropping the 64, would serve the first.
func TestGenerationHoldCoversTheInputEstimate(t *testing.T) {
	g := startWithCatalog(t, inputCatalog)
	cases := []struct {
		bytes  int
		status int
	}{
		{900, 402},
		{860, 200},
	}
	for _, c := range cases {
		key, pid := g.newProfile(t, fmt.Sprintf("hold-%d", c.bytes), "500")
		before := len(g.up.Calls())
		status, _, raw := g.postAs(t, key, "/v1/chat/completions", nil, bodyOfSize(t, c.bytes))
		if status != c.status {
			t.Fatalf("%d-byte request with 500 available: %d %s, want %d", c.bytes, status, raw, c.status)
		}
		if c.status == 402 {
			if code, _, _ := envelope(t, raw); code != "insufficient_balance" || len(g.up.Calls()) != before {
				t.Fatalf("refusal %s; upstream calls %d", raw, len(g.up.Calls())-before)
			}
			continue
		}
		// The charge is the measured input, well below the hold: the estimate is a ceiling.
		if b := g.settled(t, pid, 1); !b.LessThan(decimal.NewFromInt(500)) || b.LessThan(decimal.NewFromInt(6)) {
			t.Fatalf("balance %s after a %d-byte request", b, c.bytes)
		}
	}
}

// startWithCatalog is a gateway on its own database with a catalogue whose {{UP}} is the
// simulator.
func startWithCatalog(t *testing.T, doc string) *genEnv {
	t.Helper()
	g := startGenOn(t, storetest.DatabaseURL(t), false)
	g.admin("POST", "/admin/v1/catalog:apply", strings.ReplaceAll(doc, "{{UP}}", g.upURL))
	return g
}

// balanceOf reads GET /v1/balance with a key.
func (g *genEnv) balanceOf(t *testing.T, key string) (balance, available decimal.Decimal) {
	t.Helper()
	status, _, b := g.do("GET", "/v1/balance", bearer(key), "")
	if status != 200 {
		t.Fatalf("balance: %d %v", status, b)
	}
	return decimal.RequireFromString(b["balance"].(string)), decimal.RequireFromString(b["available"].(string))
}

// /v1/balance "available" is the balance less what requests in flight have reserved: lower
// while a generation runs, the balance again once it ended (here: cancelled, so not charged).
func TestBalanceAvailableExcludesRequestsInFlight(t *testing.T) {
	g := startGen(t)
	key, _ := g.newProfile(t, "avail", "10")
	if b, a := g.balanceOf(t, key); !b.Equal(decimal.NewFromInt(10)) || !a.Equal(b) {
		t.Fatalf("idle: balance %s available %s, want 10 and 10", b, a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", g.base+"/v1/chat/completions",
		strings.NewReader(`{"model":"m-money","stream":true,"max_tokens":12,"messages":[{"role":"user","content":"hi #sim:stall=60s"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || resp.StatusCode != 200 {
		t.Fatalf("first chunk: %d %v", resp.StatusCode, err)
	}
	// In flight: the hold (0.012) is reserved, the balance has not moved.
	b, a := g.balanceOf(t, key)
	if !b.Equal(decimal.NewFromInt(10)) || !a.LessThanOrEqual(decimal.RequireFromString("9.988")) || a.IsNegative() {
		t.Fatalf("in flight: balance %s available %s", b, a)
	}
	cancel()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, a = g.balanceOf(t, key)
		if a.Equal(b) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the request: balance %s, available %s", b, a)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !b.Equal(decimal.NewFromInt(10)) {
		t.Errorf("a cancelled request moved the balance to %s", b)
	}
}

// uploadCatalog prices a transcription model's input at 1 per token and its output at nothing,
// so that an upload's hold is exactly its input estimate: Content-Length/1000 + 64 tokens plus
// half a token per byte of its plain fields.
const uploadCatalog = `{
  "currency": "RUB",
  "families": [{"id": "fam"}],
  "providers": [{"id": "up", "kind": "openai", "base_url": "{{UP}}/v1", "api_key_env": "UP_KEY"}],
  "models": [{"id": "m-up", "family": "fam", "routes": [{"endpoint_families": ["audio.transcriptions"], "provider": "up", "upstream_model": "gpt-4o-transcribe"}],
    "prices": [{"endpoint_families": ["audio.transcriptions"], "billing_mode": "per_token", "input": "1000000", "output": "0"}]}]
}`

// uploadOfSize is a transcription form for m-up of exactly n bytes.
func uploadOfSize(t *testing.T, n int) ([]byte, string) {
	t.Helper()
	build := func(fileSize int) ([]byte, string) {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		_ = w.SetBoundary("holdboundary")
		_ = w.WriteField("model", "m-up")
		f, _ := w.CreateFormFile("file", "talk.mp3")
		_, _ = f.Write(bytes.Repeat([]byte{'a'}, fileSize))
		_ = w.Close()
		return b.Bytes(), w.FormDataContentType()
	}
	probe, _ := build(0)
	body, ct := build(n - len(probe))
	if len(body) != n {
		t.Fatalf("form of %d bytes, want %d", len(body), n)
	}
	return body, ct
}

// The hold of an upload whose Content-Length is known is pinned to it, not to how much of the
// body the front had read: 300 000 bytes hold 300 + 64 + 2 ("m-up") = 366 tokens. With 360
// available the upload is refused before anything goes upstream; with 370 it is served.
func TestUploadHoldFollowsContentLength(t *testing.T) {
	g := startWithCatalog(t, uploadCatalog)
	body, ct := uploadOfSize(t, 300_000)
	for _, c := range []struct {
		credit string
		status int
	}{{"360", 402}, {"370", 200}} {
		key, pid := g.newProfile(t, "upload-"+c.credit, c.credit)
		before := len(g.up.Calls())
		req, _ := http.NewRequest("POST", g.base+"/v1/audio/transcriptions", bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Fatalf("300 000-byte upload with %s available: %d %s, want %d", c.credit, resp.StatusCode, raw, c.status)
		}
		if c.status == 402 {
			if code, _, _ := envelope(t, raw); code != "insufficient_balance" || len(g.up.Calls()) != before {
				t.Fatalf("refusal %s; upstream calls %d", raw, len(g.up.Calls())-before)
			}
			continue
		}
		if b := g.settled(t, pid, 1); !b.LessThan(decimal.RequireFromString(c.credit)) || b.IsNegative() {
			t.Fatalf("balance %s after the upload", b)
		}
	}
}
