package billing

import (
	"testing"
	"time"
)

// The ring keeps the last waitWindow durations at a microsecond each, in 4 bytes apiece: a
// busy replica's window of waits is 64 KiB of live heap, not 512.
func TestRingKeepsTheLastWindowInMicroseconds(t *testing.T) {
	var r ring
	// A first window of 1 s waits, then a window and ten of 1..waitWindow+10 ms: the first
	// window is overwritten whole, and the ten oldest of the second too.
	for range waitWindow {
		r.add(time.Second)
	}
	for i := range waitWindow + 10 {
		r.add(time.Duration(i+1)*time.Millisecond + 999*time.Nanosecond) // the ns below a µs drop
	}
	if len(r.us) != waitWindow || cap(r.us) != waitWindow {
		t.Fatalf("ring of %d (capacity %d), want %d", len(r.us), cap(r.us), waitWindow)
	}
	if got := int64(cap(r.us)) * 4; got != 64<<10 {
		t.Fatalf("a full ring holds %d bytes, want 64 KiB", got)
	}
	p50, p99 := percentiles(append([]uint32(nil), r.us...))
	// Left: 11..waitWindow+10 ms.
	if want := time.Duration(11+waitWindow/2) * time.Millisecond; p50 != want {
		t.Errorf("p50 %v, want %v", p50, want)
	}
	if want := time.Duration(11+waitWindow*99/100) * time.Millisecond; p99 != want {
		t.Errorf("p99 %v, want %v", p99, want)
	}
	var clamped ring
	clamped.add(-time.Second)
	clamped.add(100 * time.Hour)
	if clamped.us[0] != 0 || clamped.us[1] != 1<<32-1 {
		t.Errorf("a negative and a 100-hour wait kept as %d and %d µs, want 0 and the most a uint32 holds", clamped.us[0], clamped.us[1])
	}
	if p50, p99 := percentiles(nil); p50 != 0 || p99 != 0 {
		t.Errorf("percentiles of nothing: %v %v", p50, p99)
	}
}
