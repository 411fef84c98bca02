package fx

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/shopspring/decimal"

	"modelgateway/core/catalog"
)

// The expected rates were computed independently (Python decimal, 12 significant digits,
// ROUND_HALF_UP) from the sample's USD 81,2345/1, EUR 94,1234/1 and CNY 112,3456/10.
func TestCrossRatesFromCBRSample(t *testing.T) {
	t.Parallel()
	tests := []struct {
		billing string
		want    map[string]string
	}{
		{"RUB", map[string]string{"USD": "0.0123100406847", "EUR": "0.0106243505866", "CNY": "0.0890110516122"}},
		{"USD", map[string]string{"RUB": "81.2345", "EUR": "0.863063807725", "CNY": "7.23076827219"}},
		{"EUR", map[string]string{"RUB": "94.1234", "USD": "1.15866288338", "CNY": "8.37802281531"}},
		{"CNY", map[string]string{"RUB": "11.23456", "USD": "0.138297890675", "EUR": "0.119359904126"}},
	}
	for _, tt := range tests {
		t.Run("billing "+tt.billing+" gives exact rates of the other currencies", func(t *testing.T) {
			t.Parallel()
			f, err := os.Open("testdata/cbr_daily.xml")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			date, quotes, err := parseCBR(f, []string{"USD", "EUR", "CNY"})
			if err != nil {
				t.Fatal(err)
			}
			if got := date.Format("2006-01-02"); got != "2026-11-21" {
				t.Errorf("effective date %s, want 2026-11-21", got)
			}
			rates, err := crossRates(quotes, tt.billing, catalog.Currencies)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, asStrings(rates)); diff != "" {
				t.Errorf("rates (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDivSignificantRoundsHalfAwayFromZeroAtTwelveDigits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, num, den, want string
	}{
		{"repeating third truncates below half", "1", "3", "0.333333333333"},
		{"repeating two thirds rounds up", "2", "3", "0.666666666667"},
		{"exact half at the 13th digit rounds away from zero", "1.000000000005", "1", "1.00000000001"},
		{"just below half rounds down", "1.0000000000049", "1", "1"},
		{"carry into a new leading digit", "0.09999999999999", "1", "0.1"},
		{"leading zeros do not count", "1", "8123.45", "0.000123100406847"},
		{"large values keep twelve digits", "123456789012345", "1", "123456789012000"},
		{"exact quotient is kept whole", "81.2345", "1", "81.2345"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := divSignificant(decimal.RequireFromString(tt.num), decimal.RequireFromString(tt.den))
			if !got.Equal(decimal.RequireFromString(tt.want)) {
				t.Errorf("%s/%s = %s, want %s", tt.num, tt.den, got, tt.want)
			}
		})
	}
}

func asStrings(m map[string]decimal.Decimal) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v.String()
	}
	return out
}
