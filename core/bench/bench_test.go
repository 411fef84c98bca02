package bench

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPercentileIsNearestRank(t *testing.T) {
	t.Parallel()
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"no samples give zero", nil, 50, 0},
		{"one sample is every percentile", ms(7), 99, 7 * time.Millisecond},
		{"median of an odd count is the middle", ms(1, 2, 3, 4, 5), 50, 3 * time.Millisecond},
		{"median of an even count is the lower middle", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p99 of 100 samples is the 99th", ms(hundred...), 99, 99 * time.Millisecond},
		{"p99 of 10 samples is the largest", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"p100 is the largest", ms(1, 2, 3), 100, 3 * time.Millisecond},
		{"p0 is the smallest", ms(1, 2, 3), 0, time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := percentile(tc.sorted, tc.p); got != tc.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tc.sorted, tc.p, got, tc.want)
			}
		})
	}
}

func TestParseStatTicksSumsUserAndSystemTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		stat    string
		want    int64
		wantErr bool
	}{
		{
			name: "plain command name",
			stat: "4242 (gateway) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 130 0 0 20 0 8 0 100 0 0\n",
			want: 380,
		},
		{
			name: "command name with spaces and parentheses",
			stat: "7 (a b) (c)) R 1 7 7 0 -1 0 0 0 0 0 11 22 0 0 20 0 1 0 5 0 0\n",
			want: 33,
		},
		{name: "no command name", stat: "7 R 1", wantErr: true},
		{name: "truncated", stat: "7 (x) R 1 2 3", wantErr: true},
		{name: "non-numeric times", stat: "7 (x) R 1 7 7 0 -1 0 0 0 0 0 u s 0 0\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseStatTicks([]byte(tc.stat))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("ticks = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestStatusKBReadsNamedLine(t *testing.T) {
	t.Parallel()
	status := "Name:\tgateway\nVmPeak:\t  900000 kB\nVmHWM:\t   51234 kB\nVmRSS:\t   40000 kB\n"
	for _, tc := range []struct {
		name string
		want int64
	}{{"VmHWM", 51234}, {"VmRSS", 40000}, {"VmSwap", -1}} {
		if got := statusKB([]byte(status), tc.name); got != tc.want {
			t.Errorf("statusKB(%s) = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestCountSSECountsDataEventsAndTheTerminator(t *testing.T) {
	t.Parallel()
	long := "data: {\"x\":\"" + strings.Repeat("data: ", 10000) + "\"}\n\n"
	tests := []struct {
		name       string
		body       string
		wantChunks int64
		wantDone   bool
	}{
		{"chat stream with terminator", "data: {\"a\":1}\n\ndata: {\"a\":2}\n\ndata: [DONE]\n\n", 2, true},
		{"CRLF lines and no space after the colon", "data:{\"a\":1}\r\n\r\ndata:[DONE]\r\n\r\n", 1, true},
		{"named events count once per data line", "event: message_start\ndata: {}\n\nevent: ping\ndata: {}\n\n", 2, false},
		{"comments and other fields are not events", ": keep-alive\nid: 3\nretry: 5\n\n", 0, false},
		{"cut stream has no terminator", "data: {\"a\":1}\n\ndata: {\"a\"", 2, false},
		{"line longer than the buffer counts once", long + "data: [DONE]\n\n", 1, true},
	}
	for _, tc := range tests {
		for _, reader := range []struct {
			name string
			wrap func(io.Reader) io.Reader
		}{{"whole", func(r io.Reader) io.Reader { return r }}, {"one byte at a time", iotest.OneByteReader}} {
			t.Run(tc.name+"/"+reader.name, func(t *testing.T) {
				t.Parallel()
				chunks, done, err := countSSE(reader.wrap(strings.NewReader(tc.body)))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff([]any{tc.wantChunks, tc.wantDone}, []any{chunks, done}); diff != "" {
					t.Errorf("(chunks, done) mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestCountSSEReportsReadErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("data: {}\n\n"), iotest.ErrReader(boom))
	chunks, _, err := countSSE(r)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	if chunks != 1 {
		t.Errorf("chunks = %d, want 1", chunks)
	}
}

func TestErrorSummaryListsMostFrequentFirst(t *testing.T) {
	t.Parallel()
	r := loadResult{errorKinds: map[string]int{"HTTP 502": 3, "HTTP 429": 10, "transport: EOF": 1, "HTTP 500": 2}}
	want := "10x HTTP 429; 3x HTTP 502; 2x HTTP 500; and 1 more kinds"
	if got := r.errorSummary(); got != want {
		t.Errorf("errorSummary() = %q, want %q", got, want)
	}
}

func TestParseStatReadsNameParentAndReapedChildTimes(t *testing.T) {
	t.Parallel()
	stat := "900 (postgres) S 42 900 900 0 -1 4194560 1000 0 0 0 5 6 70 80 20 0 1 0 100 0 0\n"
	got, err := parseStat([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	want := procStat{comm: "postgres", ppid: 42, utime: 5, stime: 6, cutime: 70, cstime: 80}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(procStat{})); diff != "" {
		t.Errorf("parseStat mismatch (-want +got):\n%s", diff)
	}
}

func TestParseCPUBusyLeavesOutIdleAndIOWait(t *testing.T) {
	t.Parallel()
	stat := "cpu  30 0 30 900 9 0 0 0 0 0\ncpu0 10 1 20 400 5 2 3 4 0 0\ncpu1 20 0 10 500 4 0 0 0 0 0\nintr 1\n"
	tests := []struct {
		cpu     string
		want    int64
		wantErr bool
	}{
		{cpu: "cpu0", want: 10 + 1 + 20 + 2 + 3 + 4},
		{cpu: "cpu1", want: 30},
		{cpu: "cpu2", wantErr: true},
	}
	for _, tc := range tests {
		got, err := parseCPUBusy([]byte(stat), tc.cpu)
		if (err != nil) != tc.wantErr {
			t.Fatalf("%s: err = %v, wantErr %v", tc.cpu, err, tc.wantErr)
		}
		if got != tc.want {
			t.Errorf("%s: busy = %d, want %d", tc.cpu, got, tc.want)
		}
	}
}

func TestStatusKBReadsProcIOCounters(t *testing.T) {
	t.Parallel()
	io := "rchar: 6976\nwchar: 0\nsyscr: 10\nsyscw: 3\nread_bytes: 0\n"
	if got := statusKB([]byte(io), "syscr"); got != 10 {
		t.Errorf("syscr = %d, want 10", got)
	}
	if got := statusKB([]byte(io), "syscw"); got != 3 {
		t.Errorf("syscw = %d, want 3", got)
	}
}

// TestReadProcIOCountsEveryThreadsSwitches: the context switches are the sum over the
// process's threads, voluntary and not, and grow when a thread of it sleeps; the two status
// lines are told apart (one name ends the other).
func TestReadProcIOCountsEveryThreadsSwitches(t *testing.T) {
	status := "Name:\tx\nvoluntary_ctxt_switches:\t7\nnonvoluntary_ctxt_switches:\t5\n"
	if v, n := statusKB([]byte(status), "voluntary_ctxt_switches"), statusKB([]byte(status), "nonvoluntary_ctxt_switches"); v != 7 || n != 5 {
		t.Fatalf("voluntary %d, nonvoluntary %d; want 7, 5", v, n)
	}
	before := readProcIO(os.Getpid())
	done, release := make(chan struct{}), make(chan struct{})
	go func() {
		runtime.LockOSThread() // a thread of its own, which sleeps, and lives until read
		for range 5 {
			time.Sleep(time.Millisecond)
		}
		close(done)
		<-release
	}()
	<-done
	after := readProcIO(os.Getpid())
	close(release)
	if d := after.minus(before); d.switches < 5 || before.switches <= 0 {
		t.Fatalf("switches %d then %d: a sleeping thread's were not counted", before.switches, after.switches)
	}
	if s := before.plus(after.minus(before)); s != after {
		t.Fatalf("plus and minus disagree: %+v, %+v", s, after)
	}
}

func TestMergeSumsRoundsAndKeepsTheMostOpenStreams(t *testing.T) {
	t.Parallel()
	var r loadResult
	r.merge(loadResult{concurrency: 4, elapsed: time.Second, requests: 2, errors: 1, chunks: 40, maxOpen: 3,
		latencies: []time.Duration{2, 1}, errorKinds: map[string]int{"HTTP 502": 1}})
	r.merge(loadResult{concurrency: 4, elapsed: time.Second, requests: 1, chunks: 20, maxOpen: 4,
		latencies: []time.Duration{3}, errorKinds: map[string]int{}})
	want := loadResult{concurrency: 4, elapsed: 2 * time.Second, requests: 3, errors: 1, chunks: 60, maxOpen: 4,
		latencies: []time.Duration{2, 1, 3}, errorKinds: map[string]int{"HTTP 502": 1}}
	if diff := cmp.Diff(want, r, cmp.AllowUnexported(loadResult{})); diff != "" {
		t.Errorf("merge mismatch (-want +got):\n%s", diff)
	}
}

// The upload form is what the SDKs send: a file part, then the model; exactly the size asked
// for, the same bytes on every read, and readable by a standard multipart parser whatever the
// reads' sizes.
func TestUploadFormIsAnExactSizeFileFirstForm(t *testing.T) {
	t.Parallel()
	type part struct {
		Name, Filename, ContentType string
		Size                        int
		Value                       string
	}
	tests := []struct {
		name  string
		size  int64
		model string
	}{
		{"small", 1000, "whisper-1"},
		{"file over one block and a half", 100_000, "bench-whisper"},
		{"file of exactly one block", 64<<10 + 257, "whisper-1"},
	}
	for _, tc := range tests {
		for _, reader := range []struct {
			name string
			wrap func(io.Reader) io.Reader
		}{{"whole", func(r io.Reader) io.Reader { return r }}, {"odd reads", iotest.HalfReader}} {
			t.Run(tc.name+"/"+reader.name, func(t *testing.T) {
				t.Parallel()
				f, err := newUploadForm(tc.size, tc.model)
				if err != nil {
					t.Fatal(err)
				}
				body, err := io.ReadAll(reader.wrap(f.reader()))
				if err != nil {
					t.Fatal(err)
				}
				if int64(len(body)) != tc.size || f.size != tc.size {
					t.Fatalf("form of %d bytes (size field %d), want %d", len(body), f.size, tc.size)
				}
				again, _ := io.ReadAll(f.reader())
				if sha256.Sum256(again) != sha256.Sum256(body) {
					t.Error("a second read gave other bytes")
				}
				mt, params, err := mime.ParseMediaType(f.contentType)
				if err != nil || mt != "multipart/form-data" {
					t.Fatalf("content type %q: %v", f.contentType, err)
				}
				mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
				var got []part
				for {
					p, err := mr.NextPart()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					data, err := io.ReadAll(p)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, part{Name: p.FormName(), Filename: p.FileName(), ContentType: p.Header.Get("Content-Type"), Size: len(data)})
					if p.FileName() == "" {
						got[len(got)-1].Value = string(data)
						continue
					}
					for i, c := range data {
						if c != byte(i) {
							t.Fatalf("file byte %d is %d, want %d", i, c, byte(i))
						}
					}
				}
				want := []part{
					{Name: "file", Filename: "bench.mp3", ContentType: "audio/mpeg", Size: int(f.fileSize)},
					{Name: "model", Size: len(tc.model), Value: tc.model},
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("parts mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestUploadFormSmallerThanItsPartsIsAnError(t *testing.T) {
	t.Parallel()
	if f, err := newUploadForm(100, "whisper-1"); err == nil {
		t.Errorf("form of 100 bytes: got %+v, want an error", f)
	}
}

// A reset peak forgets memory the process has given back: the upload scenario's peaks are
// those of its own phases. Not parallel: it measures this process's memory.
func TestResetPeakForgetsReleasedMemory(t *testing.T) {
	const size = 64 << 20
	big := make([]byte, size)
	for i := 0; i < len(big); i += os.Getpagesize() {
		big[i] = 1
	}
	peak, _, err := memory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(big)
	big = nil
	debug.FreeOSMemory()
	r := resetPeak(os.Getpid())
	if !r.done || r.base <= 0 {
		t.Fatalf("resetPeak = %+v, want done with a VmRSS", r)
	}
	after, _, err := memory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after >= peak-size/1024/2 {
		t.Errorf("VmHWM %d kB after the reset, want well below the %d kB peak of a released %d MiB", after, peak, size>>20)
	}
}

func TestRawConnReadsBodiesAndStreamsOverOneConnection(t *testing.T) {
	t.Parallel()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Authorization") != "Bearer k" || string(body) != "ping" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if r.URL.Query().Get("stream") != "" {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {}\n\n")
			w.(http.Flusher).Flush() // chunked: the reader must undo it
			fmt.Fprint(w, "data: {}\n\ndata: [DONE]\n\n")
			return
		}
		fmt.Fprint(w, "pong")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	h := http.Header{"Authorization": {"Bearer k"}}
	plain := &rawConn{t: target{url: srv.URL + "/x", body: []byte("ping"), header: h}}
	defer plain.close()
	for range 3 {
		if o := plain.do(nil); o.err != "" {
			t.Fatalf("plain request: %s", o.err)
		}
	}
	stream := &rawConn{t: target{url: srv.URL + "/x?stream=1", body: []byte("ping"), header: h, stream: true}}
	defer stream.close()
	for range 2 {
		if o := stream.do(nil); o.err != "" || o.chunks != 2 {
			t.Fatalf("stream: %+v", o)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want one per client", n)
	}
	bad := &rawConn{t: target{url: srv.URL + "/x", body: []byte("other"), header: h}}
	defer bad.close()
	if o := bad.do(nil); !strings.HasPrefix(o.err, "HTTP 400") {
		t.Fatalf("refused request: %+v", o)
	}
}

func TestParseRunDelayIsTheSecondField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schedstat string
		want            time.Duration
	}{
		{"on CPU, waiting, slices", "2330000000 1911000000 27281\n", 1911 * time.Millisecond},
		{"never waited", "5000 0 3\n", 0},
		{"truncated", "5000\n", 0},
		{"empty", "", 0},
	}
	for _, tc := range tests {
		if got := parseRunDelay([]byte(tc.schedstat)); got != tc.want {
			t.Errorf("%s: parseRunDelay(%q) = %v, want %v", tc.name, tc.schedstat, got, tc.want)
		}
	}
}

// Round k of the gateway is compared with round k of the bare proxy, the rounds measured side
// by side; a round without requests has no ratio.
func TestRoundRatiosPairTheRoundsMeasuredTogether(t *testing.T) {
	t.Parallel()
	r := func(requests int, cpu time.Duration) roundResult {
		return roundResult{requests: requests, elapsed: time.Second, cpu: cpu}
	}
	var res [2]phaseResult
	res[0].rounds = []roundResult{r(100, 10*time.Millisecond), r(200, 10*time.Millisecond), r(0, 0), r(100, 20*time.Millisecond)}
	res[1].rounds = []roundResult{r(50, 10*time.Millisecond), r(100, 15*time.Millisecond), r(10, time.Millisecond), r(100, 30*time.Millisecond)}
	cpu := roundRatios(res, roundResult.cpuPerReq)
	if want := []float64{1.5, 2, 3}; !slices.Equal(cpu, want) {
		t.Errorf("CPU ratios %v, want %v", cpu, want)
	}
	thr := roundRatios(res, roundResult.rps)
	if want := []float64{0.5, 0.5, 1}; !slices.Equal(thr, want) {
		t.Errorf("throughput ratios %v, want %v", thr, want)
	}
	if m := median(cpu); m != 2 {
		t.Errorf("median %v", m)
	}
	if m := median([]float64{1, 2, 4, 8}); m != 3 {
		t.Errorf("median of four %v", m)
	}
}

// The two factors of the throughput ratio: the gateway's core busy 87 % against 99 %, and
// 1.45 ms of CPU per request against 0.99 ms; their product is the rounds' ratio, 0.6.
func TestThroughputPartsMultiplyToTheRatio(t *testing.T) {
	t.Parallel()
	phase := func(requests int, cpu time.Duration) phaseResult {
		var r phaseResult
		r.requests, r.elapsed, r.cpu = requests, time.Second, cpu
		return r
	}
	res := [2]phaseResult{phase(1000, 990*time.Millisecond), phase(600, 870*time.Millisecond)}
	busy, cpu := throughputParts(res)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if !near(busy, 0.87/0.99) || !near(cpu, 0.99/1.45) {
		t.Errorf("busy share %v, CPU factor %v; want %v and %v", busy, cpu, 0.87/0.99, 0.99/1.45)
	}
	if thr := res[1].rps() / res[0].rps(); !near(busy*cpu, thr) {
		t.Errorf("busy share x CPU factor = %v, throughput ratio %v", busy*cpu, thr)
	}
	var out strings.Builder
	printThroughputParts(&out, res)
	if want := "throughput 0.60x = busy share 0.88 (gateway 87%, bare 99% of its core"; !strings.Contains(out.String(), want) {
		t.Errorf("printed %q, want it to contain %q", out.String(), want)
	}
	for i, r := range [][2]phaseResult{{{}, res[1]}, {res[0], {}}, {res[0], phase(600, 0)}} {
		if busy, cpu := throughputParts(r); busy != 0 || cpu != 0 {
			t.Errorf("case %d, a proxy without requests or CPU measured: %v, %v", i, busy, cpu)
		}
	}
}
