package relay

import (
	"bytes"
	"io"
	"net/http/httptest"
	"testing"
	"testing/iotest"
	"time"

	"modelgateway/core/wire/apierror"
)

// A body is charged as it arrives: a body stalled after its first bytes holds a chunk, not
// its declared length; a whole body holds exactly its length (or, of unknown length, its
// chunks), and each body read comes back intact though chunks are recycled between bodies.
func TestReadBodyChargesWhatArrives(t *testing.T) {
	t.Parallel()
	b := &Budget{Total: 8 << 20, PerKey: 8 << 20, PerProfile: 8 << 20}

	// Stalled: 10 KiB of a declared 1 MiB, then the reader blocks until released.
	stall := make(chan struct{})
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(bytes.Repeat([]byte("x"), 10<<10))
		<-stall
		pw.CloseWithError(io.ErrUnexpectedEOF)
	}()
	r := httptest.NewRequest("POST", "/", pr)
	r.ContentLength = 1 << 20
	r, lease := WithLease(r, b, "k", "p")
	done := make(chan *apierror.Error)
	go func() { _, err := ReadBody(r, 32<<20); done <- err }()
	for b.UsedBy("p") == 0 { // the first chunk
		time.Sleep(time.Millisecond)
	}
	if used := b.UsedBy("p"); used != ReadChunk {
		t.Fatalf("a stalled body of 10 KiB holds %d bytes, want one chunk (%d)", used, ReadChunk)
	}
	close(stall)
	if err := <-done; err == nil {
		t.Fatal("a cut body was read")
	}
	lease.Release()
	if b.Used() != 0 {
		t.Fatalf("%d bytes left after release", b.Used())
	}

	var kept [][]byte
	for i, c := range []struct {
		size     int
		declared bool
	}{{3<<20 + 17, true}, {3<<20 + 17, false}, {100, true}, {1 << 20, false}, {5 << 20, true}} {
		want := bytes.Repeat([]byte{byte('a' + i)}, c.size)
		r := httptest.NewRequest("POST", "/", iotest.HalfReader(bytes.NewReader(want)))
		r.ContentLength = -1
		if c.declared {
			r.ContentLength = int64(c.size)
		}
		r, lease := WithLease(r, b, "k", "p")
		got, err := ReadBody(r, 32<<20)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("body %d: %d bytes, %v", i, len(got), err)
		}
		if held := b.UsedBy("p"); (c.declared && held != int64(c.size)) || held < int64(c.size) || held > 2*int64(c.size)+ReadChunk {
			t.Fatalf("body %d of %d bytes (declared %v) holds %d", i, c.size, c.declared, held)
		}
		lease.Release()
		kept = append(kept, got)
	}
	for i, got := range kept {
		for _, x := range got {
			if x != byte('a'+i) {
				t.Fatalf("body %d changed after later bodies were read", i)
			}
		}
	}
	// Too large, of unknown length: refused at the limit's first byte beyond.
	r = httptest.NewRequest("POST", "/", bytes.NewReader(make([]byte, 1<<20+1)))
	r.ContentLength = -1
	if _, err := ReadBody(r, 1<<20); err == nil || err.Code != apierror.PayloadTooLarge {
		t.Fatalf("one byte over: %v", err)
	}
}
