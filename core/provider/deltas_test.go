package provider

import (
	"fmt"
	"strings"
	"testing"

	corev1 "modelgateway/gen/gateway/core/v1"
)

// Events and their text come from shared blocks, yet each keeps what it was made with while
// later ones fill and replace the blocks: a test that kept the events of a long stream and
// found one changed would catch a block written twice.
func TestDeltasKeepEveryEventAsItWasMade(t *testing.T) {
	t.Parallel()
	var d Deltas
	var want []string
	var kept []string
	buf := make([]byte, 0, textBlockBytes)
	for i := range 400 {
		text := fmt.Sprintf("w%d ", i) + strings.Repeat("é", i%40)
		if i%97 == 5 {
			text = strings.Repeat("x", textBlockBytes) // larger than a quarter block
		}
		buf = append(buf[:0], text...) // the caller's bytes are reused, as readDelta's are
		ev := d.Text(buf)
		if i%3 == 0 {
			kept = append(kept, ev.GetText().GetText())
		} else {
			kept = append(kept, d.String(buf))
		}
		want = append(want, text)
		clear(buf[:cap(buf)])
	}
	for i := range want {
		if kept[i] != want[i] {
			t.Fatalf("delta %d changed: %.40q, want %.40q", i, kept[i], want[i])
		}
	}
	a, b := d.Text([]byte("a")), d.Text([]byte("b"))
	if a == b || a.GetText().GetText() != "a" || b.GetText().GetText() != "b" {
		t.Fatalf("two events share one: %v %v", a, b)
	}
}

// Native events come from blocks too: each keeps its name and chunk while later ones fill and
// replace the blocks, and a long stream costs a block of events per nativeBlock chunks, not
// an allocation per chunk.
func TestNativesKeepEveryEventAsItWasMade(t *testing.T) {
	var n Natives
	var kept []*corev1.GenerateEvent
	for i := range 200 {
		kept = append(kept, n.Event(fmt.Sprint("e", i), []byte(fmt.Sprint("chunk ", i))))
	}
	for i, ev := range kept {
		if got := ev.GetNative(); got.GetEvent() != fmt.Sprint("e", i) || string(got.GetData()) != fmt.Sprint("chunk ", i) {
			t.Fatalf("event %d changed: %q %q", i, got.GetEvent(), got.GetData())
		}
		if i > 0 && ev == kept[i-1] {
			t.Fatalf("events %d and %d are one", i-1, i)
		}
	}
	data := []byte("{}")
	allocs := testing.AllocsPerRun(10, func() {
		var n Natives
		for range 4 * nativeBlock {
			n.Event("", data)
		}
	})
	// The Natives (it escapes), holding the first 8 events, then 16, then 32 at a time:
	// 1 + 5 for 128 events.
	if allocs > 6 {
		t.Fatalf("%v allocations for %d events, want a few blocks", allocs, 4*nativeBlock)
	}
}

// A finish room holds the first finish event; a second is one of its own, and the first
// stays as it was made.
func TestFinishRoomKeepsTheFirstEvent(t *testing.T) {
	var f FinishRoom
	first := f.Event(corev1.FinishReason_FINISH_REASON_STOP, "END")
	second := f.Event(corev1.FinishReason_FINISH_REASON_LENGTH, "")
	if first == second || first.GetFinish().GetReason() != corev1.FinishReason_FINISH_REASON_STOP || first.GetFinish().GetStopSequence() != "END" ||
		second.GetFinish().GetReason() != corev1.FinishReason_FINISH_REASON_LENGTH {
		t.Fatalf("first %v, second %v", first, second)
	}
}
