package clock

import (
	"testing"
	"time"
)

// TestMonoMeasuresWhatTimeSinceMeasures: an interval read with Mono is the interval
// time.Since reads around it, and the clock never goes back.
func TestMonoMeasuresWhatTimeSinceMeasures(t *testing.T) {
	outer := time.Now()
	m0 := Mono()
	time.Sleep(20 * time.Millisecond)
	m1 := Mono()
	took := time.Since(outer)
	d := time.Duration(m1 - m0)
	if d < 20*time.Millisecond || d > took {
		t.Fatalf("Mono measured %v, slept 20ms, time.Since around it %v", d, took)
	}
	last := Mono()
	for range 1000 {
		if m := Mono(); m < last {
			t.Fatalf("Mono went back: %d after %d", m, last)
		} else {
			last = m
		}
	}
}

func BenchmarkMono(b *testing.B) {
	var s int64
	for b.Loop() {
		s += Mono()
	}
	_ = s
}

func BenchmarkTimeNow(b *testing.B) {
	var s int64
	for b.Loop() {
		s += time.Now().UnixNano()
	}
	_ = s
}
