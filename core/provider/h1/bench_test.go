package h1

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRoundTrip is one non-streamed upstream call, lean against net/http.Transport
// configured as core/provider's was, on the same canned local upstream (a raw socket server
// answering a chat completion of about 600 bytes): serially (ns/op, B/op, allocs/op) and
// from 64 goroutines (cpu-ns/op: the process's CPU per request, the upstream's included,
// which is the same for both). Run with -count and interleave: go test -bench RoundTrip.
func BenchmarkRoundTrip(b *testing.B) {
	answer := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"sim-gpt","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("word ", 80) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":20000,"completion_tokens":20,"total_tokens":20020}}`)
	url := cannedUpstream(b, answer) + "/v1/chat/completions"
	body := []byte(`{"model":"sim-gpt","messages":[{"role":"user","content":"hello #sim:input=20000"}]}`)
	transports := []struct {
		name string
		rt   func() http.RoundTripper
	}{
		{"lean", func() http.RoundTripper {
			return &Transport{MaxIdleConnsPerHost: 256}
		}},
		{"net-http", func() http.RoundTripper {
			return &http.Transport{
				DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
				ForceAttemptHTTP2:   true,
				MaxIdleConns:        1024,
				MaxIdleConnsPerHost: 256,
				IdleConnTimeout:     90 * time.Second,
				TLSHandshakeTimeout: 10 * time.Second,
			}
		}},
	}
	call := func(b *testing.B, rt http.RoundTripper) bool {
		// As core/provider sends it: a bytes body, shared header values, a context of its own.
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		req.Header["Content-Type"] = []string{"application/json"}
		req.Header["User-Agent"] = []string{"modelgateway/1"}
		req.Header["Authorization"] = []string{"Bearer bench-upstream-key"}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			b.Error(err)
			return false
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != int64(len(answer)) {
			b.Errorf("%d bytes, %v", n, err)
			return false
		}
		return true
	}
	for _, tc := range transports {
		b.Run("serial/"+tc.name, func(b *testing.B) {
			rt := tc.rt()
			defer rt.(interface{ CloseIdleConnections() }).CloseIdleConnections()
			call(b, rt)
			b.ReportAllocs()
			c0 := processCPU()
			for b.Loop() {
				if !call(b, rt) {
					b.FailNow()
				}
			}
			b.ReportMetric(float64(processCPU()-c0)/float64(b.N), "cpu-ns/op")
		})
	}
	for _, tc := range transports {
		b.Run("parallel64/"+tc.name, func(b *testing.B) {
			rt := tc.rt()
			defer rt.(interface{ CloseIdleConnections() }).CloseIdleConnections()
			b.ReportAllocs()
			b.SetParallelism(32)
			b.ResetTimer()
			c0 := processCPU()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() && call(b, rt) {
				}
			})
			b.ReportMetric(float64(processCPU()-c0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkReadHead reads the head of an answer as OpenAI's API sends one (twenty-odd
// fields), keeping every field or only those core/provider reads (Transport.ResponseHeaders).
func BenchmarkReadHead(b *testing.B) {
	answer := "HTTP/1.1 200 OK\r\nDate: Sat, 28 Nov 2026 00:00:00 GMT\r\nContent-Type: application/json\r\n" +
		"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\nAccess-Control-Expose-Headers: X-Request-ID\r\n" +
		"Openai-Organization: user-abcdefghijklmnopqrstuvwx\r\nOpenai-Processing-Ms: 412\r\nOpenai-Project: proj_abcdefghijklmnopqrstuvwx\r\n" +
		"Openai-Version: 2020-10-01\r\nX-Envoy-Upstream-Service-Time: 415\r\nX-Ratelimit-Limit-Requests: 10000\r\n" +
		"X-Ratelimit-Limit-Tokens: 30000000\r\nX-Ratelimit-Remaining-Requests: 9999\r\nX-Ratelimit-Remaining-Tokens: 29999980\r\n" +
		"X-Ratelimit-Reset-Requests: 6ms\r\nX-Ratelimit-Reset-Tokens: 0s\r\nX-Request-Id: req_0123456789abcdef0123456789abcdef\r\n" +
		"Strict-Transport-Security: max-age=31536000; includeSubDomains; preload\r\nCf-Cache-Status: DYNAMIC\r\n" +
		"Set-Cookie: __cf_bm=abcdefghijklmnopqrstuvwxyz0123456789; path=/; expires=Sat, 28-Nov-26 00:30:00 GMT; domain=.api.openai.com; HttpOnly; Secure; SameSite=None\r\n" +
		"X-Content-Type-Options: nosniff\r\nServer: cloudflare\r\nCf-Ray: 0123456789abcdef-AMS\r\nAlt-Svc: h3=\":443\"; ma=86400\r\n\r\n"
	for _, keep := range []struct {
		name    string
		headers []string
	}{{"all", nil}, {"kept", answerHeadersForBench}} {
		b.Run(keep.name, func(b *testing.B) {
			t := &Transport{ResponseHeaders: keep.headers}
			p := parser{keep: t.kept()}
			r := strings.NewReader(answer)
			br := bufio.NewReader(r)
			var h head
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(answer)
				br.Reset(r)
				if err := p.readHead(br, &h); err != nil || h.status != 200 {
					b.Fatal(err)
				}
			}
		})
	}
}

// answerHeadersForBench are core/provider's answerHeaders.
var answerHeadersForBench = []string{"Content-Type", "Retry-After", "Retry-After-Ms"}
