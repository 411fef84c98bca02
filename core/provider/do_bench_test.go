package provider

import (
	"context"
	"io"
	"net"
	"testing"

	"modelgateway/core/simulator"
)

// BenchmarkDo is one non-streamed upstream call through Do, serially, on the canned
// simulator (a chat completion of 80 words replayed from memory over a minimal server, whose
// own cost is small and the same for every version of Do): the client's context is
// cancellable, as a request's is.
func BenchmarkDo(b *testing.B) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = simulator.ServeCanned(ctx, ln, simulator.New(simulator.Options{Words: 80})) }()
	url := "http://" + ln.Addr().String() + "/v1/chat/completions"
	body := []byte(`{"model":"sim-gpt","messages":[{"role":"user","content":"hello"}]}`)
	call := func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := NewRequest(ctx, url, body) // as the adapters build it
		resp, err := Do(req, Timeouts{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
	call()
	b.ReportAllocs()
	for b.Loop() {
		call()
	}
}
