package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// smapsParts sums Rss by part: the executable's code, read-only data and data with the
// anonymous mapping right after it (bss), anonymous mappings in the Go heap's range, other
// anonymous ones, and the rest.
func TestSmapsParts(t *testing.T) {
	const exe = "/work/bin/gateway"
	smaps := `00400000-011c6000 r-xp 00000000 fe:00 10018822                           /work/bin/gateway
Size:              14104 kB
Rss:                9000 kB
011c6000-027b4000 r--p 00dc6000 fe:00 10018822                           /work/bin/gateway
Rss:               12000 kB
027b4000-0288f000 rw-p 023b4000 fe:00 10018822                           /work/bin/gateway
Rss:                 600 kB
0288f000-048dc000 rw-p 00000000 00:00 0 
Rss:                 200 kB
c000000000-c004000000 rw-p 00000000 00:00 0 
Rss:               15000 kB
7f0000000000-7f0000100000 rw-p 00000000 00:00 0 
Rss:                2900 kB
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
Rss:                  16 kB
7ffd00100000-7ffd00102000 r-xp 00000000 00:00 0                          [vdso]
Rss:                   4 kB
`
	got := smapsParts(strings.NewReader(smaps), exe)
	want := map[string]int64{"text": 9000, "rodata": 12000, "data+bss": 800, "heap arenas": 15000, "other anon": 2900, "other": 20}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d kB, want %d", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("parts %v, want %v", got, want)
	}
	var buf bytes.Buffer
	s := memSnapshot{status: map[string]int64{"VmRSS": 40 << 10}, parts: got, metrics: map[string]uint64{"/gc/heap/goal:bytes": 13 << 20}}
	writeMemParts(&buf, s, s)
	for _, line := range []string{"smaps Rss heap arenas", "14.65", "/gc/heap/goal:bytes", "13.00", "VmRSS", "40.00"} {
		if !strings.Contains(buf.String(), line) {
			t.Errorf("the table has no %q:\n%s", line, buf.String())
		}
	}
}

// The sampler keeps the snapshot of the highest VmRSS it saw, with smaps parts read within
// memPartsStep of it.
func TestSampleMemPeak(t *testing.T) {
	start := takeMemSnapshot(true)
	if start.parts == nil || start.status["VmRSS"] <= 0 || start.metrics["/gc/heap/goal:bytes"] == 0 {
		t.Fatalf("start snapshot %+v", start)
	}
	peak := start
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); sampleMemPeak(stop, &peak) }()
	grown := make([]byte, 8<<20)
	for i := range grown { // resident page by page while the sampler reads
		grown[i] = 1
		if i%(1<<20) == 0 {
			time.Sleep(3 * memSamplePeriod / 2)
		}
	}
	time.Sleep(3 * memSamplePeriod)
	close(stop)
	<-done
	if peak.status["VmRSS"] < start.status["VmRSS"]+4<<10 {
		t.Fatalf("peak VmRSS %d kB, start %d: 8 MiB touched between", peak.status["VmRSS"], start.status["VmRSS"])
	}
	var parts int64
	for _, kb := range peak.parts {
		parts += kb
	}
	if parts < peak.status["VmRSS"]-memPartsStep-1024 {
		t.Fatalf("peak's parts add up to %d kB for VmRSS %d", parts, peak.status["VmRSS"])
	}
	_ = grown[len(grown)-1]
}
