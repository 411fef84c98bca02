package sse

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReader: any upstream byte stream is read without a panic, each event's data within
// MaxLine, and the reader always ends. Seeds: every golden .sse stream of the providers.
func FuzzReader(f *testing.F) {
	files, _ := filepath.Glob("../../provider/*/testdata/*.sse")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("event: a\ndata: 1\ndata: 2\nid: x\n\n: comment\r\ndata: 3\r\n\r\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		rd := NewReader(bytes.NewReader(body))
		defer rd.Release()
		for range len(body) + 2 {
			ev, err := rd.Next()
			if err != nil {
				return
			}
			if len(ev.Data) > len(body) {
				t.Fatalf("event data of %d bytes from a %d-byte stream", len(ev.Data), len(body))
			}
		}
		t.Fatalf("more events than bytes in %q", body)
	})
}
