package simulator

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"modelgateway/core/wire/sse"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/")

// fixedNow makes created timestamps, and so whole transcripts, reproducible.
func fixedNow() time.Time { return time.Unix(1767225600, 0) }

// start runs a simulator behind an httptest server and returns both.
func start(t *testing.T, o Options) (*Simulator, string) {
	t.Helper()
	if o.Now == nil {
		o.Now = fixedNow
	}
	sim := New(o)
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return sim, srv.URL
}

// post sends body to base+path and returns status, headers and the whole body; err reports a
// body that ended with a transport error (a dropped connection).
func post(t *testing.T, base, path, body string) (status int, h http.Header, raw []byte, err error) {
	t.Helper()
	resp, e := http.Post(base+path, "application/json", strings.NewReader(body))
	if e != nil {
		t.Fatalf("POST %s: %v", path, e)
	}
	defer resp.Body.Close()
	raw, err = io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, raw, err
}

// mustPost is post for answers that must arrive whole with status 200.
func mustPost(t *testing.T, base, path, body string) []byte {
	t.Helper()
	status, _, raw, err := post(t, base, path, body)
	if err != nil || status != http.StatusOK {
		t.Fatalf("POST %s: status %d, err %v: %s", path, status, err, raw)
	}
	return raw
}

// events parses an SSE body, once whole and once one byte at a time, and checks both agree.
func events(t *testing.T, raw []byte) []sse.Event {
	t.Helper()
	read := func(r io.Reader) []sse.Event {
		var out []sse.Event
		rd := sse.NewReader(r)
		for {
			ev, err := rd.Next()
			if errors.Is(err, io.EOF) {
				return out
			}
			if err != nil {
				t.Fatalf("parsing SSE: %v", err)
			}
			out = append(out, ev)
		}
	}
	whole := read(bytes.NewReader(raw))
	bytewise := read(iotest.OneByteReader(bytes.NewReader(raw)))
	if len(whole) != len(bytewise) {
		t.Fatalf("%d events whole, %d read byte by byte", len(whole), len(bytewise))
	}
	return whole
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden transcript (run with -update to accept):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}
