package main

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// A client that goes away mid-stream cancels the upstream request at once, leaves no goroutine
// behind, and its usage is unreliable (spec 6.3; design.md "a disconnect test that asserts the
// outcome").
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	g := startGen(t)
	routes := []struct{ name, path, body string }{
		{"chat", "/v1/chat/completions", `{"model":"%s","stream":true,"messages":[{"role":"user","content":"wait #sim:stall=20s"}]}`},
		{"messages", "/v1/messages", `{"model":"%s","stream":true,"max_tokens":100,"messages":[{"role":"user","content":"wait #sim:stall=20s"}]}`},
		{"responses", "/v1/responses", `{"model":"%s","stream":true,"input":"wait #sim:stall=20s"}`},
		{"gemini", "/v1beta/models/%s:streamGenerateContent?alt=sse", `{"contents":[{"parts":[{"text":"wait #sim:stall=20s"}]}]}`},
	}
	// Warm up every path once so that pools and lazily started goroutines exist before the
	// leak baseline is taken.
	for _, r := range routes {
		for _, up := range upstreamKinds {
			g.post(t, fmtRoute(r.path, up.model), map[string]string{"anthropic-version": "2023-06-01"}, strings.ReplaceAll(fmtRoute(r.body, up.model), "wait #sim:stall=20s", "hi"))
		}
	}
	http.DefaultClient.CloseIdleConnections()
	baseline := goleak.IgnoreCurrent()

	for _, r := range routes {
		for _, up := range upstreamKinds {
			name := r.name + "-" + up.kind
			id := "gone-" + name
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "POST", g.base+fmtRoute(r.path, up.model), strings.NewReader(fmtRoute(r.body, up.model)))
			req.Header.Set("Authorization", "Bearer "+g.key)
			req.Header.Set("anthropic-version", "2023-06-01")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Request-Id", id)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// Read the first event, then go away while the upstream is paused.
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("%s: %d %q %v", name, resp.StatusCode, line, err)
			}
			start := time.Now()
			cancel()
			resp.Body.Close()
			o := g.meter.wait(t, id)
			if o.Usage.Reliable || o.Status != "cancelled" {
				t.Errorf("%s: outcome %+v", name, o)
			}
			// The upstream would go on for 20 s; 10 s tells a cancelled call from one left to
			// run without flaking on a loaded machine.
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("%s: the generation ended %v after the client left", name, d)
			}
		}
	}
	http.DefaultClient.CloseIdleConnections()
	goleak.VerifyNone(t, baseline)
}

func fmtRoute(s, model string) string { return strings.Replace(s, "%s", model, 1) }
