package provider

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// ReadAll returns the whole answer up to max bytes, whether or not the upstream declared its
// length, and refuses one byte more; a failed read is an *Error.
func TestReadAllBoundsTheAnswer(t *testing.T) {
	t.Parallel()
	const max = 1000
	cases := []struct {
		name     string
		size     int
		declared bool
		tooLarge bool
	}{
		{"declared, small", 300, true, false},
		{"declared, exactly max", max, true, false},
		{"declared, one over max", max + 1, true, true},
		{"declared, far over max", 5 * max, true, true},
		{"declared empty", 0, true, false},
		{"chunked, exactly max", max, false, false},
		{"chunked, one over max", max + 1, false, true},
		{"chunked, many reads", 700, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			body := bytes.Repeat([]byte("a"), c.size)
			copy(body, "first")
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if c.declared {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
					_, _ = w.Write(body)
					return
				}
				for i := 0; i < len(body); i += 100 { // several chunks
					_, _ = w.Write(body[i:min(i+100, len(body))])
					w.(http.Flusher).Flush()
				}
			}))
			defer srv.Close()
			req, err := NewRequest(context.Background(), srv.URL, []byte(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := Do(req, Timeouts{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := ReadAll(resp.Body, max)
			var pe *Error
			switch {
			case c.tooLarge && (!errors.As(err, &pe) || !strings.Contains(pe.Message, "too large")):
				t.Errorf("%d bytes: %v, want too large", c.size, err)
			case !c.tooLarge && (err != nil || !bytes.Equal(got, body)):
				t.Errorf("%d bytes: got %d bytes, %v", c.size, len(got), err)
			}
		})
	}
}

type failingBody struct{ n int }

func (b *failingBody) Read(p []byte) (int, error) {
	if b.n == 0 {
		b.n++
		return copy(p, "partial"), nil
	}
	return 0, errors.New("connection reset")
}

func (b *failingBody) Close() error { return nil }

func TestReadAllReportsAFailedRead(t *testing.T) {
	t.Parallel()
	_, err := ReadAll(&failingBody{}, 100)
	var pe *Error
	if !errors.As(err, &pe) || pe.Message != "reading the upstream answer failed" {
		t.Errorf("%v", err)
	}
	if _, err := ReadAll(io.NopCloser(strings.NewReader("")), 0); err != nil {
		t.Errorf("an empty answer with max 0: %v", err)
	}
}

// An answer longer than the buffer ReadAll makes from its declared length is read whole.
func TestReadAllBeyondThePresize(t *testing.T) {
	t.Parallel()
	body := bytes.Repeat([]byte("0123456789"), maxPresize/10+100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	req, err := NewRequest(context.Background(), srv.URL, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := Do(req, Timeouts{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadAll(resp.Body, 2*maxPresize)
	if err != nil || !bytes.Equal(got, body) {
		t.Errorf("got %d of %d bytes: %v", len(got), len(body), err)
	}
}
