package sse

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// chunked delivers the stream in random-sized pieces, as a network does.
type chunked struct {
	s   string
	rnd *rand.Rand
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	n := min(1+c.rnd.IntN(7), len(c.s), len(p))
	copy(p, c.s[:n])
	c.s = c.s[n:]
	return n, nil
}

func readAll(t *testing.T, r io.Reader) ([]Event, error) {
	t.Helper()
	rd := NewReader(r)
	var out []Event
	for {
		ev, err := rd.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestReaderFraming(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in string
		want     []Event
	}{
		{"named events as messages streams send them",
			"event: message_start\ndata: {\"a\":1}\n\nevent: ping\ndata: {}\n\n",
			[]Event{{Name: "message_start", Data: []byte(`{"a":1}`)}, {Name: "ping", Data: []byte(`{}`)}}},
		{"CRLF and CR line ends", "data: one\r\n\r\ndata: two\r\rdata: three\n\n",
			[]Event{{Data: []byte("one")}, {Data: []byte("two")}, {Data: []byte("three")}}},
		{"several data lines join with newline", "data: a\ndata: b\n\n", []Event{{Data: []byte("a\nb")}}},
		{"comments and keep-alives are skipped", ": keep-alive\n\ndata: x\n\n", []Event{{Data: []byte("x")}}},
		{"no space after the colon", "data:[DONE]\n\n", []Event{{Data: []byte("[DONE]")}}},
		{"an event without data is not dispatched", "event: lonely\n\ndata: y\n\n", []Event{{Data: []byte("y")}}},
		{"an event cut off by the end of the stream is not returned", "data: whole\n\ndata: cut", []Event{{Data: []byte("whole")}}},
		{"ids are kept", "id: 7\ndata: z\n\n", []Event{{ID: "7", Data: []byte("z")}}},
	}
	for _, tc := range cases {
		for _, mode := range []string{"whole", "one byte", "random chunks"} {
			var r io.Reader = strings.NewReader(tc.in)
			switch mode {
			case "one byte":
				r = iotest.OneByteReader(r)
			case "random chunks":
				r = &chunked{s: tc.in, rnd: rand.New(rand.NewPCG(1, 2))}
			}
			got, err := readAll(t, r)
			if !errors.Is(err, io.EOF) {
				t.Errorf("%s (%s): %v", tc.name, mode, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (%s) (-want +got):\n%s", tc.name, mode, diff)
			}
		}
	}
}

func TestWriterFlushesEachEventAndRoundTrips(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	w := NewWriter(rec)
	if err := w.Event("content_block_delta", []byte("{\"t\":\"a\"}")); err != nil {
		t.Fatal(err)
	}
	if !rec.Flushed {
		t.Error("event not flushed")
	}
	if err := w.Event("", []byte("line1\nline2")); err != nil {
		t.Fatal(err)
	}
	want := "event: content_block_delta\ndata: {\"t\":\"a\"}\n\ndata: line1\ndata: line2\n\n"
	if rec.Body.String() != want {
		t.Errorf("wire %q, want %q", rec.Body.String(), want)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	got, _ := readAll(t, strings.NewReader(rec.Body.String()))
	if diff := cmp.Diff([]Event{{Name: "content_block_delta", Data: []byte(`{"t":"a"}`)}, {Data: []byte("line1\nline2")}}, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestReaderDropsAnEventEndedOnlyByTheStream(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"data: a\n\ndata: x\r", "data: a\n\ndata: x\n", "data: a\n\ndata: x\r\n"} {
		got, err := readAll(t, strings.NewReader(in))
		if !errors.Is(err, io.EOF) || len(got) != 1 || string(got[0].Data) != "a" {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
}

func BenchmarkReader(b *testing.B) {
	ev := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" hello\"}}\n\n"
	stream := strings.Repeat(ev, 1000)
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		r := NewReader(strings.NewReader(stream))
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
}

// Events share data blocks, yet every event's Data stays as it was read while later events
// are read (decoders keep some, e.g. a usage chunk until the end), and appending to one
// cannot reach the next.
func TestKeptDataSurvivesLaterEvents(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	var want []string
	for i := range 300 {
		d := strings.Repeat(string(rune('a'+i%26)), 1+i*37%900)
		if i%50 == 7 {
			d = strings.Repeat("x", 9000) // larger than a block
		}
		if i%11 == 0 {
			b.WriteString("data: " + d + "\ndata: second\n\n")
			want = append(want, d+"\nsecond")
			continue
		}
		b.WriteString("event: e\ndata: " + d + "\n\n")
		want = append(want, d)
	}
	rd := NewReader(strings.NewReader(b.String()))
	defer rd.Release()
	var kept [][]byte
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if n := len(kept); n > 0 {
			_ = append(kept[n-1], "clobber"...) // the previous event's, now followed by ev's
		}
		kept = append(kept, ev.Data)
	}
	if len(kept) != len(want) {
		t.Fatalf("%d events, want %d", len(kept), len(want))
	}
	for i := range want {
		if string(kept[i]) != want[i] {
			t.Fatalf("event %d changed: %.40q..., want %.40q...", i, kept[i], want[i])
		}
	}
}

// A borrowing reader returns events in the usual shape from its read buffer: no arena
// block and no copy (60 deltas that arrive together allocate nothing), the same events as a
// reader that copies. (An event split between two reads still takes the general loop, and
// its copy.)
func TestABorrowingReaderAllocatesNothing(t *testing.T) {
	data := deltaEvents(60)
	src := strings.NewReader(data)
	var rd Reader
	check := true // the events' contents, on the first read (Sprintf allocates)
	read := func(borrow bool) (n int) {
		src.Reset(data)
		rd.Reset(src)
		if borrow {
			rd.Borrow()
		}
		for {
			ev, err := rd.Next()
			if err != nil {
				return n
			}
			if check {
				if want := fmt.Sprintf("{\"delta\":{\"text\":\"w%d \"}}", n); string(ev.Data) != want || ev.Name != "content_block_delta" {
					t.Fatalf("event %d: %q %q", n, ev.Name, ev.Data)
				}
			}
			n++
		}
	}
	if n := read(true); n != 60 || len(data) > readBufferSize {
		t.Fatalf("%d events", n)
	}
	check = false
	if a := testing.AllocsPerRun(20, func() { read(true) }); a != 0 {
		t.Fatalf("borrowing: %v allocations", a)
	}
	if a := testing.AllocsPerRun(20, func() { read(false) }); a == 0 {
		t.Fatal("copying: no allocation, so this test cannot tell borrowing from it")
	}
	rd.Release()
}

// pacedReader yields one event per Read, as a paced upstream's arrivals do.
type pacedReader struct {
	events [][]byte
	i      int
}

func (p *pacedReader) Read(b []byte) (int, error) {
	if p.i == len(p.events) {
		return 0, io.EOF
	}
	n := copy(b, p.events[p.i])
	p.i++
	return n, nil
}

// BenchmarkReaderPaced reads a stream of 22 deltas that arrive one per read (make bench's
// paced simulator), copying into the arena and borrowing the read buffer.
func BenchmarkReaderPaced(b *testing.B) {
	var events [][]byte
	for i := range 22 {
		events = append(events, fmt.Appendf(nil, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"w%d \"}}\n\n", i))
	}
	for _, borrow := range []bool{false, true} {
		b.Run(map[bool]string{false: "copying", true: "borrowing"}[borrow], func(b *testing.B) {
			p := &pacedReader{events: events}
			var rd Reader
			b.ReportAllocs()
			for b.Loop() {
				p.i = 0
				rd.Reset(p)
				if borrow {
					rd.Borrow()
				}
				for {
					if _, err := rd.Next(); err != nil {
						break
					}
				}
			}
			rd.Release()
		})
	}
}

// Events split between reads take the general loop, whose copies a borrowing reader makes
// in one small block used again for each event, and given back at Release for the next
// stream: 200 events read a byte at a time cost it no allocation, where a copying reader
// fills a new 4 KiB block every few dozen.
func TestABorrowingReaderUsesOneBlockForSplitEvents(t *testing.T) {
	data := deltaEvents(200)
	src := strings.NewReader(data)
	var rd Reader
	read := func(borrow bool) (n int) {
		src.Reset(data)
		rd.Reset(iotest.OneByteReader(src))
		if borrow {
			rd.Borrow()
		}
		for {
			if _, err := rd.Next(); err != nil {
				return n
			}
			n++
		}
	}
	if n := read(true); n != 200 {
		t.Fatalf("%d events", n)
	}
	borrowing := testing.AllocsPerRun(10, func() { read(true) })
	copying := testing.AllocsPerRun(10, func() { read(false) })
	// OneByteReader's wrapper is one allocation of each run.
	if borrowing != 1 || copying < 3 {
		t.Fatalf("allocations: borrowing %v, copying %v; want 1 (the wrapper: the block is recycled) and more", borrowing, copying)
	}
	rd.Release()
}

// deltaEvents is n messages-style text deltas in the usual shape, each its own text.
func deltaEvents(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"delta\":{\"text\":\"w%d \"}}\n\n", i)
	}
	return b.String()
}
