package provider

import (
	"errors"
	"io"
	"testing"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
)

// A static answer of one event is one allocation (its stream, the slice and the start and
// usage events), and gives Start, the event, the usage and the end, in that order; one of
// more events gives them all.
func TestStaticStreamOfOneEventIsOneAllocation(t *testing.T) { // not parallel: AllocsPerRun
	start := &corev1.Start{Model: "m", Id: "a1"}
	u := metering.Usage{Input: 20, Output: 3, Reliable: true}
	native := NativeEvent("", []byte(`{"id":"a1"}`))
	if n := testing.AllocsPerRun(100, func() { _ = NewStaticStream(start, []*corev1.GenerateEvent{native}, u) }); n != 1 {
		t.Errorf("NewStaticStream: %v allocations, want 1", n)
	}
	for _, events := range [][]*corev1.GenerateEvent{{native}, {native, native, native}} {
		s := NewStaticStream(start, events, u)
		first, err := s.Next()
		if err != nil || first.GetStart() != start {
			t.Fatalf("first event %v, %v", first, err)
		}
		for range events {
			if ev, err := s.Next(); err != nil || ev != native {
				t.Fatalf("event %v, %v", ev, err)
			}
		}
		if ev, err := s.Next(); err != nil || ev.GetUsage().GetInputTokens() != 20 || ev.GetUsage().GetOutputTokens() != 3 || !ev.GetUsage().GetReliable() {
			t.Fatalf("usage event %v, %v", ev, err)
		}
		if _, err := s.Next(); !errors.Is(err, io.EOF) {
			t.Fatalf("after the usage: %v", err)
		}
		if s.Usage() != u {
			t.Fatalf("usage %+v", s.Usage())
		}
	}
}

// A passthrough answer's Start, its event and its stream are one allocation, and the stream
// gives them in order.
func TestNativeAnswerIsOneAllocation(t *testing.T) { // not parallel: AllocsPerRun
	u := metering.Usage{Input: 20, Output: 3, Reliable: true}
	data := []byte(`{"id":"a1"}`)
	answer := func() *StaticStream {
		x := new(NativeAnswer)
		x.Start.Model = "m"
		x.Event("", data)
		return x.Stream(u)
	}
	if n := testing.AllocsPerRun(100, func() { _ = answer() }); n != 1 {
		t.Errorf("a native answer: %v allocations, want 1", n)
	}
	s := answer()
	if ev, err := s.Next(); err != nil || ev.GetStart().GetModel() != "m" {
		t.Fatalf("first event %v, %v", ev, err)
	}
	if ev, err := s.Next(); err != nil || string(ev.GetNative().GetData()) != string(data) {
		t.Fatalf("native event %v, %v", ev, err)
	}
	if ev, err := s.Next(); err != nil || ev.GetUsage().GetInputTokens() != 20 {
		t.Fatalf("usage event %v, %v", ev, err)
	}
	if _, err := s.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the usage: %v", err)
	}
}
