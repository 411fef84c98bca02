package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"modelgateway/core/store/storetest"
)

// flushCatalog routes m-claude's chat completions to a scripted messages upstream.
const flushCatalog = `{
  "currency": "RUB",
  "families": [{"id": "fam"}],
  "providers": [{"id": "up-anthropic", "kind": "anthropic", "base_url": "{{UP}}", "api_key_env": "UP_KEY"}],
  "models": [
    {"id": "m-claude", "family": "fam", "routes": [{"endpoint_families": ["chat.completions"], "provider": "up-anthropic", "upstream_model": "up-claude"}],
     "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "1", "output": "2"}]}
  ]
}`

// messagesStream is a messages SSE answer of n text deltas ("w0 ", "w1 ", ...): the head
// (message_start, content_block_start), one piece per delta, and the tail.
func messagesStream(n int) (head string, deltas []string, tail string) {
	head = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_flush\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"up-claude\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
	for i := range n {
		deltas = append(deltas, fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"w%d \"}}\n\n", i))
	}
	tail = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":" + strconv.Itoa(n) + "}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	return head, deltas, tail
}

// startFlushGateway starts a gateway whose m-claude streams from upstream.
func startFlushGateway(t *testing.T, upstream http.HandlerFunc) *genEnv {
	t.Helper()
	return startFlushGatewayOn(t, storetest.DatabaseURL(t), upstream)
}

func startFlushGatewayOn(t *testing.T, dbURL string, upstream http.HandlerFunc) *genEnv {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	g := startGenWithDB(t, dbURL, func(*Config) {})
	g.admin("POST", "/admin/v1/catalog:apply", strings.ReplaceAll(flushCatalog, "{{UP}}", up.URL))
	g.key, g.profileID = g.newProfile(t, "flush", "1000")
	return g
}

// chunkedStream sends a streamed chat request over a raw connection and reads the answer's
// HTTP/1.1 chunks one by one: net/http writes one chunk per flush of a small answer, so the
// chunks are the flushes the client sees. seen is called with the body so far after each one.
func chunkedStream(t *testing.T, g *genEnv, seen func(body string)) (chunks int, body string) {
	t.Helper()
	reqBody := `{"model":"m-claude","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	c, err := net.Dial("tcp", strings.TrimPrefix(g.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // a held event would stall the stream until here
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		g.key, len(reqBody), reqBody)
	br := bufio.NewReader(c)
	chunked := false
	for first := true; ; first = false {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the answer's head: %v", err)
		}
		line = strings.TrimRight(line, "\r\n")
		if first && !strings.HasPrefix(line, "HTTP/1.1 200") {
			t.Fatalf("status line %q", line)
		}
		if strings.EqualFold(line, "Transfer-Encoding: chunked") {
			chunked = true
		}
		if line == "" {
			break
		}
	}
	if !chunked {
		t.Fatal("the stream is not chunked")
	}
	var all bytes.Buffer
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading a chunk size after %d chunks (%q): %v", chunks, all.String(), err)
		}
		size, err := strconv.ParseInt(strings.TrimRight(line, "\r\n"), 16, 64)
		if err != nil {
			t.Fatalf("chunk size %q: %v", line, err)
		}
		if size == 0 {
			return chunks, all.String()
		}
		if _, err := io.CopyN(&all, br, size+2); err != nil { // the data and its CRLF
			t.Fatalf("reading a chunk: %v", err)
		}
		all.Truncate(all.Len() - 2)
		chunks++
		seen(all.String())
	}
}

// deltasIn counts the content deltas "wK " of a chat stream body, in order.
func deltasIn(t *testing.T, body string) int {
	t.Helper()
	n := 0
	for _, line := range strings.Split(body, "\n") {
		if strings.Contains(line, `"content":"w`) {
			if want := fmt.Sprintf(`"content":"w%d "`, n); !strings.Contains(line, want) {
				t.Fatalf("delta %d: %s", n, line)
			}
			n++
		}
	}
	return n
}

// Events that the upstream sends together reach the client together: one flush for the lot,
// not one per event (issue 17: 24 system calls per streamed answer became 5).
func TestStreamedEventsAvailableTogetherShareFlushes(t *testing.T) {
	t.Parallel()
	const n = 40
	head, deltas, tail := messagesStream(n)
	g := startFlushGateway(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		// The whole answer in one write, as a fast model's backlog arrives.
		_, _ = io.WriteString(w, head+strings.Join(deltas, "")+tail)
	})
	chunks, body := chunkedStream(t, g, func(string) {})
	if got := deltasIn(t, body); got != n {
		t.Fatalf("the client got %d of %d deltas:\n%s", got, n, body)
	}
	if !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("the stream does not end with [DONE]:\n%s", body)
	}
	// Flushed per event, the n deltas alone would be n chunks; together they are a few (the
	// response buffer's 2 KiB overflows, a flush per upstream read, one before the charge).
	if chunks > n/4 {
		t.Fatalf("%d events arrived in %d chunks: flushes are not coalesced", n+4, chunks)
	}
	t.Logf("%d chat chunks in %d HTTP chunks", n+4, chunks)
}

// A paced upstream's events reach the client one by one: the client sees each delta before
// the upstream sends the next (the upstream waits for the client), so no event waits in the
// gateway for a later one.
func TestPacedStreamEventsAreDeliveredBeforeTheNextArrives(t *testing.T) {
	t.Parallel()
	const n = 8
	head, deltas, tail := messagesStream(n)
	next := make(chan struct{})
	g := startFlushGateway(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		_, _ = io.WriteString(w, head+deltas[0])
		_ = rc.Flush()
		for _, d := range append(deltas[1:], tail) {
			select {
			case <-next: // the client has seen the last delta
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Second):
				t.Errorf("the client never saw the delta before %q", d)
				return
			}
			_, _ = io.WriteString(w, d)
			_ = rc.Flush()
		}
	})
	released := 0
	chunks, body := chunkedStream(t, g, func(body string) {
		// Each delta lets the upstream send one more piece.
		for released < n && deltasIn(t, body) > released {
			released++
			select {
			case next <- struct{}{}:
			case <-time.After(20 * time.Second):
				t.Fatalf("the upstream stopped waiting after %d deltas", released-1)
			}
		}
	})
	if got := deltasIn(t, body); got != n || released != n {
		t.Fatalf("the client got %d of %d deltas (released %d):\n%s", got, n, released, body)
	}
	if chunks < n {
		t.Fatalf("%d deltas in %d chunks", n, chunks)
	}
}

// The end of an answer waits for its durable charge, its content does not: while the charge
// waits (here for a lock on the profile's row), the client already has every delta and the
// finish chunk, and only then does the charge go through and the usage chunk and [DONE] follow.
func TestContentIsNotHeldBehindTheCharge(t *testing.T) {
	t.Parallel()
	const n = 10
	head, deltas, tail := messagesStream(n)
	dbURL := storetest.DatabaseURL(t)
	g := startFlushGatewayOn(t, dbURL, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, head+strings.Join(deltas, "")+tail)
	})
	// A first answer puts the key's balance lease in place: the next one needs the profile's
	// row only for its charge.
	if _, body := chunkedStream(t, g, func(string) {}); !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("first answer:\n%s", body)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT 1 FROM profiles WHERE id = $1 FOR UPDATE", g.profileID); err != nil {
		t.Fatal(err)
	}
	released := false
	_, body := chunkedStream(t, g, func(body string) {
		if !released && deltasIn(t, body) == n && strings.Contains(body, `"finish_reason":"stop"`) {
			if strings.Contains(body, "[DONE]") {
				t.Fatalf("the answer ended while its charge was waiting:\n%s", body)
			}
			released = true
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})
	if !released {
		t.Fatalf("the client never saw the whole content:\n%s", body)
	}
	// Held behind the charge, the content would have come only once the charge had given up
	// (the database timeout), with an error instead of the end.
	if !strings.HasSuffix(body, "data: [DONE]\n\n") || !strings.Contains(body, `"usage":{"prompt_tokens"`) {
		t.Fatalf("the answer did not end with its usage and [DONE]:\n%s", body)
	}
}

// BenchmarkStreamedChunk is the gateway's whole per-chunk path: a streamed chat request over
// HTTP, translated from a messages upstream that answers at once, billed and charged. Its
// sub-benchmarks differ only in the number of deltas, so that the difference of two is the
// cost of the chunks alone, without the request around them:
//
//	go test -run x -bench StreamedChunk -benchmem .
func BenchmarkStreamedChunk(b *testing.B) {
	for _, n := range []int{20, 120} {
		head, deltas, tail := messagesStream(n)
		answer := head + strings.Join(deltas, "") + tail
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, answer)
		}))
		e := startGateway(b, storetest.DatabaseURL(b), adminToken, func(c *Config) {
			c.Env = func(name string) string { return map[string]string{"UP_KEY": upstreamKey}[name] }
		})
		e.admin("POST", "/admin/v1/catalog:apply", strings.ReplaceAll(flushCatalog, "{{UP}}", up.URL))
		g := &genEnv{env: e}
		key, _ := g.newProfile(b, "bench", "1000000000")
		body := `{"model":"m-claude","stream":true,"messages":[{"role":"user","content":"hi"}]}`
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
		b.Run(fmt.Sprintf("deltas=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				req, _ := http.NewRequest("POST", e.base+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				raw, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || !bytes.HasSuffix(raw, []byte("data: [DONE]\n\n")) {
					b.Fatalf("status %d, %v: %s", resp.StatusCode, err, raw)
				}
			}
			// Wall time waits for the charge's group commit; CPU time is the work.
			b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
		client.CloseIdleConnections()
		up.Close()
	}
}
