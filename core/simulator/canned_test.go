package simulator

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestCannedReplaysTheFirstAnswerFromMemory(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sim := New(Options{Words: 3})
	done := make(chan error, 1)
	go func() { done <- ServeCanned(ctx, ln, sim) }()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	post := func(body string) (string, http.Header) {
		t.Helper()
		resp, err := client.Post("http://"+ln.Addr().String()+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, err %v: %s", resp.StatusCode, err, data)
		}
		return string(data), resp.Header
	}
	body := `{"model":"m","messages":[{"role":"user","content":"hi #sim:input=5000"}]}`
	first, h := post(body)
	if !strings.Contains(first, `"prompt_tokens":5000`) || h.Get("Content-Type") != "application/json" {
		t.Fatalf("first answer is not the simulator's (%v): %s", h, first)
	}
	second, _ := post(body)
	if second != first {
		t.Fatalf("replayed answer differs:\n%s\n%s", first, second)
	}
	if n := sim.Requests("/v1/chat/completions"); n != 1 {
		t.Fatalf("the simulator computed %d answers, want 1 (the second is replayed)", n)
	}
	stream, h := post(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") || !bytes.HasSuffix([]byte(stream), []byte("data: [DONE]\n\n")) {
		t.Fatalf("stream answer (%v): %s", h, stream)
	}
	if n := sim.Requests("/v1/chat/completions"); n != 2 {
		t.Fatalf("a different body must be computed: %d answers, want 2", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ServeCanned after cancel: %v", err)
	}
}
