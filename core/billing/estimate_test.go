package billing

import "testing"

// The input side of a generation hold: half a token per body byte, plus 64 for the provider's
// framing. Pinned, since every hold (and so every insufficient_balance) follows from it.
func TestInputEstimate(t *testing.T) {
	t.Parallel()
	for bytes, want := range map[int]int64{0: 64, 1: 64, 2: 65, 1000: 564, 32 << 20: 16<<20 + 64} {
		if got := InputEstimate(bytes); got != want {
			t.Errorf("InputEstimate(%d) = %d, want %d", bytes, got, want)
		}
	}
}
