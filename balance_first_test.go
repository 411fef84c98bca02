package main

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// Issue 16: the balance is decided before the body, like the key and the model. A key whose
// profile cannot pay the smallest hold of the route gets 402 insufficient_balance while its
// large body is still on the way (the client has sent the head and 1 KiB of a body of
// tens of MiB, then stalls); nothing reaches the upstream and no money moves. The same heads
// with a credited profile are served and charged. A free route (token counting) needs a
// positive balance as well (issue 30), and is charged nothing.
func TestAnEmptyBalanceIsRefusedBeforeTheBody(t *testing.T) {
	t.Parallel()
	g := startGenWith(t, func(*Config) {})
	key, pid := g.newProfile(t, "empty", "0")
	const msgs = `{"model":"m-anthropic","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	const gemini = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":5}}`
	routes := []struct {
		path  string
		limit int64
		body  string
	}{
		{"/v1/messages", 32 << 20, msgs},
		{"/v1beta/models/m-gemini:generateContent", 20 << 20, gemini},
		{"/v1beta/models/m-gemini:streamGenerateContent?alt=sse", 20 << 20, gemini},
	}

	before := len(g.up.Calls())
	for _, rt := range routes {
		c, br := rawRequest(t, g.g.HTTPAddr, postHead(rt.path, key, rt.limit-1, "Anthropic-Version: 2023-06-01\r\n"))
		if _, err := c.Write(bytes.Repeat([]byte(" "), 1024)); err != nil {
			t.Fatalf("%s: %v", rt.path, err)
		}
		resp, raw := readAnswer(t, c, br, 10*time.Second)
		if resp.StatusCode != http.StatusPaymentRequired {
			t.Fatalf("%s with an empty balance: %d %s, want 402 before the body", rt.path, resp.StatusCode, raw)
		}
		if code, _, _ := envelope(t, raw); code != "insufficient_balance" {
			t.Errorf("%s: code %s, want insufficient_balance", rt.path, code)
		}
		// The gateway is done with the connection: it does not wait for the rest of the body.
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := io.Copy(io.Discard, br); n != 0 || (err != nil && !errors.Is(err, syscall.ECONNRESET)) {
			t.Errorf("%s: after the refusal the connection gave %d bytes, %v; want it closed", rt.path, n, err)
		}
	}
	// A free route needs a positive balance too (issue 30): refused, served once credited.
	const count = `{"model":"m-anthropic","messages":[{"role":"user","content":"hi"}]}`
	status, _, raw := g.postAs(t, key, "/v1/messages/count_tokens", anthropicVersion, count)
	if code, _, _ := envelope(t, raw); status != http.StatusPaymentRequired || code != "insufficient_balance" {
		t.Fatalf("count_tokens with an empty balance: %d %s", status, raw)
	}
	if n := upstreamGenerations(g, before); n != 0 {
		t.Fatalf("%d generations reached the upstream for an empty balance", n)
	}
	if b, sum, charges := g.ledgerOf(t, pid); !b.IsZero() || !sum.IsZero() || charges != 0 {
		t.Fatalf("after the refusals: balance %s, entries %s, %d charges; want nothing moved", b, sum, charges)
	}

	// The positive case on the same key: credited, each route serves the request and charges it.
	g.admin("POST", "/admin/v1/profiles/"+pid+":credit", `{"amount":"10","reason":"topup","idempotency_key":"late"}`)
	if status, _, raw := g.postAs(t, key, "/v1/messages/count_tokens", anthropicVersion, count); status != 200 {
		t.Fatalf("count_tokens with a balance: %d %s", status, raw)
	}
	for i, rt := range routes {
		status, _, raw := g.postAs(t, key, rt.path, anthropicVersion, rt.body)
		if status != 200 {
			t.Fatalf("%s with a balance: %d %s", rt.path, status, raw)
		}
		if b := g.settled(t, pid, i+1); !b.LessThan(decimal.NewFromInt(10)) || b.IsNegative() {
			t.Fatalf("%s: balance %s after the charge", rt.path, b)
		}
	}
	if n := upstreamGenerations(g, before); n != len(routes) {
		t.Fatalf("%d generations upstream, want %d", n, len(routes))
	}
}

// A route where some model the key may use costs nothing for the smallest request is not
// refused before the body (m-money prices input at 0 on chat.completions: the body may name
// it): a malformed body there is answered as one, which only a gateway that read it can do.
// On /v1/messages, where every model costs something, the same body gets the 402 first.
func TestAnEmptyBalanceWaitsForTheBodyWhenAFreeRequestIsPossible(t *testing.T) {
	t.Parallel()
	g := startGenWith(t, func(*Config) {})
	key, pid := g.newProfile(t, "empty-free", "0")
	for _, c := range []struct {
		path   string
		status int
		code   string
	}{
		{"/v1/chat/completions", 400, "invalid_request_error"},
		{"/v1/messages", 402, "insufficient_balance"},
	} {
		status, _, raw := g.postAs(t, key, c.path, anthropicVersion, `{"model": not json`)
		if code, _, _ := envelope(t, raw); status != c.status || code != c.code {
			t.Errorf("%s, an empty balance and a malformed body: %d %s, want %d %s", c.path, status, raw, c.status, c.code)
		}
	}
	// Nothing was charged for the refusals: a known charge made after them is the only one.
	g.admin("POST", "/admin/v1/profiles/"+pid+":credit", `{"amount":"10","reason":"topup","idempotency_key":"late"}`)
	if status, _, raw := g.postAs(t, key, "/v1/messages", anthropicVersion, `{"model":"m-anthropic","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`); status != 200 {
		t.Fatalf("credited: %d %s", status, raw)
	}
	if b := g.settled(t, pid, 1); !b.LessThan(decimal.NewFromInt(10)) {
		t.Fatalf("balance %s after one charge", b)
	}
}

// anthropicVersion is the header /v1/messages requires; the other routes ignore it.
var anthropicVersion = map[string]string{"Anthropic-Version": "2023-06-01"}

// upstreamGenerations counts the upstream calls after the first n that generate (token
// counting may be answered by the upstream too).
func upstreamGenerations(g *genEnv, n int) int {
	count := 0
	for _, c := range g.up.Calls()[n:] {
		if !strings.Contains(c.Path, "count_tokens") && !strings.Contains(c.Path, "countTokens") {
			count++
		}
	}
	return count
}
