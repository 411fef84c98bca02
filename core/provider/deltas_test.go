package provider

import (
	"fmt"
	"strings"
	"testing"
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
