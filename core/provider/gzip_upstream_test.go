package provider

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// An upstream that compresses what it may (gzip when asked) is read as plain JSON and SSE:
// the upstream client asks for gzip and decodes it, as net/http did, so usage parsing and
// what clients get do not depend on it. The plain upstream is the positive case's twin.
func TestGzipUpstreamIsDecoded(t *testing.T) {
	t.Parallel()
	const answer = `{"id":"x","usage":{"prompt_tokens":12,"completion_tokens":3}}`
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprint("gzip=", compress), func(t *testing.T) {
			t.Parallel()
			asked := make(chan string, 2)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				asked <- r.Header.Get("Accept-Encoding")
				out := io.Writer(w)
				if compress && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
					w.Header().Set("Content-Encoding", "gzip")
					zw := gzip.NewWriter(w)
					defer zw.Close()
					out = zw
				}
				if r.URL.Path == "/stream" {
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(out, "event: text\ndata: hello\n\nevent: stop\ndata: bye\n\n")
					return
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(out, answer)
			}))
			defer srv.Close()
			resp, err := get(t, srv.URL+"/json", Timeouts{FirstByte: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			raw, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || string(raw) != answer || resp.Header.Get("Content-Encoding") != "" {
				t.Fatalf("%q %v %v", raw, err, resp.Header)
			}
			if got := <-asked; got != "gzip" {
				t.Fatalf("Accept-Encoding %q", got)
			}
			s := openStream(t, context.Background(), srv.URL+"/stream")
			defer s.Close()
			var texts []string
			for {
				ev, err := s.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if tx := ev.GetText(); tx != nil {
					texts = append(texts, tx.GetText())
				}
			}
			if fmt.Sprint(texts) != "[hello bye]" {
				t.Fatalf("stream texts %v", texts)
			}
		})
	}
}
