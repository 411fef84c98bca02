package billing

import (
	"errors"
	"testing"

	"github.com/shopspring/decimal"

	"modelgateway/core/metering"
	"modelgateway/core/store"
)

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func nd(s string) decimal.NullDecimal {
	if s == "" {
		return decimal.NullDecimal{}
	}
	return decimal.NullDecimal{Decimal: dec(s), Valid: true}
}

func TestCostPerCategory(t *testing.T) {
	t.Parallel()
	p := Price{Input: dec("15"), CachedInput: dec("7.5"), CacheWrite: dec("18.75"), Output: dec("60")}
	cases := []struct {
		name string
		u    metering.Usage
		want string
	}{
		{"input only", metering.Usage{Input: 1_000_000}, "15"},
		{"cached input at its own rate", metering.Usage{CachedInput: 1_000_000}, "7.5"},
		{"cache write at its own rate", metering.Usage{CacheWrite: 1_000_000}, "18.75"},
		{"output at its own rate, reasoning not added", metering.Usage{Output: 1_000_000, Reasoning: 400_000}, "60"},
		{"all four summed", metering.Usage{Input: 100, CachedInput: 200, CacheWrite: 300, Output: 400}, "0.032625"},
		{"one token is exact to nine digits", metering.Usage{Input: 1}, "0.000015"},
		{"zero usage costs zero", metering.Usage{}, "0"},
	}
	for _, tc := range cases {
		if got := p.Cost(tc.u); !got.Equal(dec(tc.want)) {
			t.Errorf("%s: cost %s, want %s", tc.name, got, tc.want)
		}
	}
	// 1 token at 0.0000015 per 1M is 1.5e-12: below the ninth digit, rounds to zero; 600
	// such tokens are 9e-10, which rounds to 1e-9 (half away from zero).
	tiny := Price{Input: dec("0.0000015"), CachedInput: dec("0.0000015"), CacheWrite: dec("0.0000015"), Output: dec("0")}
	if got := tiny.Cost(metering.Usage{Input: 1}); !got.IsZero() {
		t.Errorf("sub-nano cost %s, want 0", got)
	}
	if got := tiny.Cost(metering.Usage{Input: 600}); !got.Equal(dec("0.000000001")) {
		t.Errorf("rounding: %s, want 0.000000001", got)
	}
	if got := (Price{PerRequest: true, Request: dec("3.00")}).Cost(metering.Usage{Input: 5}); !got.Equal(dec("3")) {
		t.Errorf("per request: %s", got)
	}
}

// Cost skips categories without tokens: the same value and digits as the sum of all six.
func TestCostIsTheSumOfEveryCategory(t *testing.T) {
	t.Parallel()
	p := Price{Input: dec("2.5"), CachedInput: dec("1.25"), CacheWrite: dec("3.125"), Output: dec("10"),
		AudioInput: dec("40"), AudioOutput: dec("80.000000001")}
	full := func(u metering.Usage) decimal.Decimal {
		return decimal.NewFromInt(u.Input - u.AudioInput).Mul(p.Input).
			Add(decimal.NewFromInt(u.AudioInput).Mul(p.AudioInput)).
			Add(decimal.NewFromInt(u.CachedInput).Mul(p.CachedInput)).
			Add(decimal.NewFromInt(u.CacheWrite).Mul(p.CacheWrite)).
			Add(decimal.NewFromInt(u.Output - u.AudioOutput).Mul(p.Output)).
			Add(decimal.NewFromInt(u.AudioOutput).Mul(p.AudioOutput)).Shift(-6).Round(Scale)
	}
	for _, u := range []metering.Usage{
		{}, {Input: 20000, Output: 17}, {Input: 7, CachedInput: 3}, {Output: 1},
		{Input: 100, AudioInput: 100, Output: 50, AudioOutput: 20, CacheWrite: 9},
		{Input: 1, CachedInput: 1, CacheWrite: 1, Output: 1, AudioInput: 1, AudioOutput: 1},
		{Input: 123456789, Output: 987654321},
	} {
		got, want := p.Cost(u), full(u)
		if !got.Equal(want) || got.String() != want.String() {
			t.Errorf("%+v: cost %s, want %s", u, got, want)
		}
	}
}

func TestWorstCaseCoversEveryCost(t *testing.T) {
	t.Parallel()
	p := Price{Input: dec("3"), CachedInput: dec("0.3"), CacheWrite: dec("3.75"), Output: dec("15")}
	in, out := int64(1000), int64(500)
	worst := p.WorstCase(in, out)
	for _, u := range []metering.Usage{
		{Input: in, Output: out}, {CachedInput: in, Output: out}, {CacheWrite: in, Output: out},
		{Input: in / 3, CachedInput: in / 3, CacheWrite: in / 3, Output: out},
	} {
		if c := p.Cost(u); c.GreaterThan(worst) {
			t.Errorf("cost %s of %+v exceeds the hold %s", c, u, worst)
		}
	}
	// Rounded up: a hold of 1 input token at 0.0000015 per 1M is one nano-unit, not zero.
	tiny := Price{Input: dec("0.0000015"), CachedInput: dec("0.0000015"), CacheWrite: dec("0.0000015")}
	if got := tiny.WorstCase(1, 0); !got.Equal(dec("0.000000001")) {
		t.Errorf("worst case %s, want 0.000000001", got)
	}
}

func TestFindPrice(t *testing.T) {
	t.Parallel()
	fam := []string{"chat.completions", "responses"}
	cases := []struct {
		name    string
		prices  []store.Price
		family  string
		want    Price
		wantErr bool
	}{
		{"explicit zero is a price", []store.Price{{EndpointFamilies: fam, BillingMode: "per_token", Input: nd("0"), Output: nd("0")}},
			"chat.completions", Price{Input: dec("0"), CachedInput: dec("0"), CacheWrite: dec("0"), Output: dec("0")}, false},
		{"unpriced cache components fall back to input", []store.Price{{EndpointFamilies: fam, BillingMode: "per_token", Input: nd("2"), Output: nd("8")}},
			"responses", Price{Input: dec("2"), CachedInput: dec("2"), CacheWrite: dec("2"), Output: dec("8")}, false},
		{"no output price for generation", []store.Price{{EndpointFamilies: fam, BillingMode: "per_token", Input: nd("2")}},
			"chat.completions", Price{}, true},
		{"family not covered", []store.Price{{EndpointFamilies: fam, BillingMode: "per_token", Input: nd("2"), Output: nd("8")}},
			"messages", Price{}, true},
		{"per request", []store.Price{{EndpointFamilies: []string{"messages"}, BillingMode: "per_request", Request: nd("3")}},
			"messages", Price{PerRequest: true, Request: dec("3")}, false},
	}
	for _, tc := range cases {
		got, err := Find(tc.prices, tc.family, true)
		if tc.wantErr {
			if !errors.Is(err, ErrNoPrice) {
				t.Errorf("%s: err %v", tc.name, err)
			}
			continue
		}
		if err != nil || got.PerRequest != tc.want.PerRequest || !got.Input.Equal(tc.want.Input) || !got.CachedInput.Equal(tc.want.CachedInput) ||
			!got.CacheWrite.Equal(tc.want.CacheWrite) || !got.Output.Equal(tc.want.Output) || !got.Request.Equal(tc.want.Request) {
			t.Errorf("%s: got %+v %v, want %+v", tc.name, got, err, tc.want)
		}
	}
}

// Audio tokens are a part of input and output, priced at the audio rates where the catalogue
// sets them and at the text rates where it does not; the hold covers the dearer of the two.
func TestAudioParts(t *testing.T) {
	t.Parallel()
	priced, err := Find([]store.Price{{EndpointFamilies: []string{"realtime"}, BillingMode: "per_token",
		Input: nd("4"), CachedInput: nd("0.4"), Output: nd("16"), AudioInput: nd("32"), AudioOutput: nd("64")}}, "realtime", true)
	if err != nil {
		t.Fatal(err)
	}
	textOnly, err := Find([]store.Price{{EndpointFamilies: []string{"realtime"}, BillingMode: "per_token", Input: nd("4"), Output: nd("16")}}, "realtime", true)
	if err != nil {
		t.Fatal(err)
	}
	// 300 input of which 128 cached and 136 uncached audio; 120 output of which 90 audio.
	u := metering.Usage{Input: 172, CachedInput: 128, AudioInput: 136, Output: 120, AudioOutput: 90, Reliable: true}
	// (36*4 + 136*32 + 128*0.4 + 30*16 + 90*64) / 1M
	if got, want := priced.Cost(u), dec("0.0107872"); !got.Equal(want) {
		t.Errorf("audio priced: %s, want %s", got, want)
	}
	// Everything at the text rates, cache reads at the input rate: (300*4 + 120*16) / 1M.
	if got, want := textOnly.Cost(u), dec("0.00312"); !got.Equal(want) {
		t.Errorf("audio at text rates: %s, want %s", got, want)
	}
	if worst := priced.WorstCase(300, 120); worst.LessThan(priced.Cost(metering.Usage{Input: 300, AudioInput: 300, Output: 120, AudioOutput: 120})) {
		t.Errorf("hold %s below an all-audio response", worst)
	}
}
