package main

import (
	"errors"
	"io"
	"strings"
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
