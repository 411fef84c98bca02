package sse

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"testing/iotest"
)

// FuzzReader: any upstream byte stream is read without a panic, each event's data within
// MaxLine, and the reader always ends; read whole (where Next finds whole events in its
// buffer: buffered) and one byte at a time (where it never does: the general loop), it gives
// the same events. Seeds: every golden .sse stream of the providers.
func FuzzReader(f *testing.F) {
	files, _ := filepath.Glob("../../provider/*/testdata/*.sse")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("event: a\ndata: 1\ndata: 2\nid: x\n\n: comment\r\ndata: 3\r\n\r\n"))
	f.Add([]byte("event: a\ndata: 1\n\nevent:b\ndata:2\n\ndata: 3\n\nevent: c\n\ndata: x\r\n\ndata: 4"))
	f.Fuzz(func(t *testing.T, body []byte) {
		whole, wholeErr := readEvents(t, bytes.NewReader(body), len(body))
		bytewise, byteErr := readEvents(t, iotest.OneByteReader(bytes.NewReader(body)), len(body))
		if !reflect.DeepEqual(whole, bytewise) || !errors.Is(wholeErr, byteErr) {
			t.Fatalf("%q:\nwhole     %q %v\none byte  %q %v", body, whole, wholeErr, bytewise, byteErr)
		}
		// Borrowing, each event's data is copied before the next is read, as its user must.
		for _, r := range []io.Reader{bytes.NewReader(body), iotest.OneByteReader(bytes.NewReader(body)), iotest.HalfReader(bytes.NewReader(body))} {
			borrowed, borrowErr := readEventsBorrowing(t, r, len(body))
			if !reflect.DeepEqual(emptyAsNil(whole), borrowed) || !errors.Is(wholeErr, borrowErr) {
				t.Fatalf("%q:\nwhole     %q %v\nborrowing %q %v", body, whole, wholeErr, borrowed, borrowErr)
			}
		}
	})
}

// readEvents reads every event of r, a stream of size bytes, and the error that ended it.
func readEvents(t *testing.T, r io.Reader, size int) ([]Event, error) {
	rd := NewReader(r)
	defer rd.Release()
	var evs []Event
	for range size + 2 {
		ev, err := rd.Next()
		if err != nil {
			return evs, err
		}
		if len(ev.Data) > size {
			t.Fatalf("event data of %d bytes from a %d-byte stream", len(ev.Data), size)
		}
		evs = append(evs, ev)
	}
	t.Fatalf("more events than bytes")
	return nil, nil
}

// readEventsBorrowing is readEvents with a borrowing reader: each event's data is copied at
// once (nil stays nil), and a later read must not have changed an earlier event's copy.
func readEventsBorrowing(t *testing.T, r io.Reader, size int) ([]Event, error) {
	rd := NewReader(r)
	rd.Borrow()
	defer rd.Release()
	var evs []Event
	for range size + 2 {
		ev, err := rd.Next()
		if err != nil {
			return evs, err
		}
		ev.Data = bytes.Clone(ev.Data)
		if len(ev.Data) == 0 {
			ev.Data = nil
		}
		evs = append(evs, ev)
	}
	t.Fatalf("more events than bytes")
	return nil, nil
}

// emptyAsNil is evs with empty data as nil: whether an empty event's data is nil or empty
// depends on where the reader found it, and means the same.
func emptyAsNil(evs []Event) []Event {
	if evs == nil {
		return nil
	}
	out := make([]Event, len(evs))
	for i, ev := range evs {
		if len(ev.Data) == 0 {
			ev.Data = nil
		}
		out[i] = ev
	}
	return out
}
