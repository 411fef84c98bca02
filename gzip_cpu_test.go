package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"modelgateway/core/wire/apierror"
)

// gzipOf compresses prefix, unit repeated up to about size bytes, and suffix.
func gzipOf(t *testing.T, prefix, unit, suffix string, size int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	_, _ = io.WriteString(zw, prefix)
	chunk := []byte(strings.Repeat(unit, (1<<20)/len(unit)))
	for w := 0; w+len(chunk) <= size-len(prefix)-len(suffix); w += len(chunk) {
		_, _ = zw.Write(chunk)
	}
	_, _ = io.WriteString(zw, suffix)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Issue 30: an upload of about 80 KB of gzip decoded to 32 MiB of small JSON messages, just
// within the route's limit, and cost the gateway 2.4 s (chat) to 3.3 s (count_tokens) of CPU
// (measured before the fix on this machine, the in-process upstream included). A gzip body
// may now expand at most 64 times: such uploads are 413 payload_too_large after a few ms of
// CPU, while an ordinary gzip body (the positive case) is served. Not parallel: the CPU
// measured is the whole process's.
func TestGzipBombsAreRefusedWithBoundedCPU(t *testing.T) {
	g := startGenWith(t, func(*Config) {})
	const size = 32<<20 - 4096
	post := func(path string, body []byte) (int, []byte, time.Duration) {
		t.Helper()
		req, _ := http.NewRequest("POST", g.base+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-Encoding", "gzip")
		req.Header.Set("Authorization", "Bearer "+g.key)
		req.Header.Set("Anthropic-Version", "2023-06-01")
		before := processCPU()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, raw, processCPU() - before
	}
	ordinary := gzipOf(t, `{"model":"m-openai","max_tokens":5,"messages":[`, `{"role":"user","content":"a"},`, `{"role":"user","content":"a"}]}`, 4<<10)
	if status, raw, _ := post("/v1/chat/completions", ordinary); status != 200 {
		t.Fatalf("an ordinary gzip body: %d %s", status, raw)
	}
	bombs := []struct {
		name, path string
		body       []byte
	}{
		{"chat, many messages", "/v1/chat/completions", gzipOf(t, `{"model":"m-openai","max_tokens":5,"messages":[`, `{"role":"user","content":"a"},`, `{"role":"user","content":"a"}]}`, size)},
		{"count, many messages", "/v1/messages/count_tokens", gzipOf(t, `{"model":"m-anthropic","messages":[`, `{"role":"user","content":"a"},`, `{"role":"user","content":"a"}]}`, size)},
		{"count, one long text", "/v1/messages/count_tokens", gzipOf(t, `{"model":"m-anthropic","messages":[{"role":"user","content":"`, "a ", `"}]}`, size)},
		{"content, spaces past the limit", "/v1beta/models/m-gemini:countTokens", gzipOf(t, `{"contents":[]}`, " ", "", 64<<20)},
	}
	for _, b := range bombs {
		status, raw, cpu := post(b.path, b.body)
		code, _, _ := envelope(t, raw)
		t.Logf("%s: %d bytes of gzip, %d %s, %v of CPU", b.name, len(b.body), status, code, cpu)
		if status != http.StatusRequestEntityTooLarge || code != apierror.PayloadTooLarge {
			t.Fatalf("%s: %d %s, want 413 payload_too_large", b.name, status, raw)
		}
		// Before the fix: 2.4 s and more. The bound leaves room for a loaded machine.
		if cpu > 300*time.Millisecond {
			t.Fatalf("%s: %v of CPU for a %d-byte upload", b.name, cpu, len(b.body))
		}
	}
	g.checkMoney(t, g.profileID)
}
