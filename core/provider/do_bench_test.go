package provider

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkDo is one non-streamed upstream call through Do, serially, on a canned local
// upstream (a raw socket answering a chat completion of about 600 bytes, whose own cost is
// small and the same for every version of Do): the client's context is cancellable, as a
// request's is.
func BenchmarkDo(b *testing.B) {
	answer := `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("word ", 80) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":80}}`
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(answer)) + "\r\n\r\n" + answer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					n := 0
					for {
						line, err := br.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(line) <= 2 {
							break
						}
						if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
							n, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
						}
					}
					if _, err := br.Discard(n); err != nil {
						return
					}
					if _, err := c.Write(resp); err != nil {
						return
					}
				}
			}()
		}
	}()
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
