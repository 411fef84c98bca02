package bot

import (
	"testing"

	"github.com/shopspring/decimal"
)

// Stars are rounded up exactly: the credit (stars × rate) is never below the amount asked, and
// never a star more than needed. A float division gets the third and fifth cases wrong.
func TestStarsFor(t *testing.T) {
	for _, tc := range []struct {
		amount, rate string
		stars        int64
	}{
		{"100", "1.3", 77},
		{"130", "1.3", 100},
		{"1", "0.333333333", 4}, // 3 stars would credit 0.999999999
		{"0.999999999", "0.333333333", 3},
		{"0.3", "0.1", 3}, // 0.3/0.1 is 2.9999999999999996 in binary floating point
		{"13000", "1.3", 10000},
		{"1", "5", 1},
	} {
		amount, rate := decimal.RequireFromString(tc.amount), decimal.RequireFromString(tc.rate)
		got := starsFor(amount, rate)
		if got != tc.stars {
			t.Errorf("%s at %s: %d stars, want %d", tc.amount, tc.rate, got, tc.stars)
		}
		if credit := rate.Mul(decimal.NewFromInt(got)); credit.LessThan(amount) || credit.Sub(rate).GreaterThanOrEqual(amount) {
			t.Errorf("%s at %s: %d stars credit %s", tc.amount, tc.rate, got, credit)
		}
	}
}

// The payload carries the rate the invoice was priced at; a payload without one (a fiat
// invoice's) has none.
func TestPayloadRate(t *testing.T) {
	r, ok := payloadRate(starsPayload("0f0e0d0c-0000-0000-0000-000000000001", decimal.RequireFromString("1.30")))
	if !ok || !r.Equal(decimal.RequireFromString("1.3")) {
		t.Fatalf("rate %s %v", r, ok)
	}
	for _, p := range []string{topUpPayload("0f0e0d0c-0000-0000-0000-000000000001"), "topup:x:xtr:", "topup:x:xtr:-1", "topup:x:xtr:abc"} {
		if _, ok := payloadRate(p); ok {
			t.Errorf("payload %q has a rate", p)
		}
	}
}
