package fx

import (
	"fmt"

	"github.com/shopspring/decimal"
)

// SignificantDigits is how many significant digits a stored rate keeps. Each rate is computed
// from the exact source fractions with one division, rounded half away from zero at the 12th
// significant digit (e.g. 1/81.2345 = 0.0123100406847). CBR quotes carry at most about 8
// significant digits, so nothing of the source is lost, and the smallest plausible rate
// (≈0.01) still has more than 9 fractional digits.
const SignificantDigits = 12

// Rouble is the currency the CBR quotes in.
const Rouble = "RUB"

// crossRates turns rouble quotes into "units of each currency per 1 unit of billing": for every
// currency c other than billing, (RUB per billing) / (RUB per c). quotes must hold every
// non-rouble currency of currencies; RUB itself is 1/1.
func crossRates(quotes map[string]quote, billing string, currencies []string) (map[string]decimal.Decimal, error) {
	rub := func(c string) (quote, error) {
		if c == Rouble {
			return quote{value: decimal.NewFromInt(1), nominal: decimal.NewFromInt(1)}, nil
		}
		q, ok := quotes[c]
		if !ok {
			return quote{}, fmt.Errorf("no rouble quote for %s", c)
		}
		return q, nil
	}
	b, err := rub(billing)
	if err != nil {
		return nil, err
	}
	out := make(map[string]decimal.Decimal, len(currencies))
	for _, c := range currencies {
		if c == billing {
			continue // the billing currency needs no rate
		}
		q, err := rub(c)
		if err != nil {
			return nil, err
		}
		// (b.value/b.nominal) / (q.value/q.nominal), as one exact fraction.
		out[c] = divSignificant(b.value.Mul(q.nominal), b.nominal.Mul(q.value))
	}
	return out, nil
}

// divSignificant returns num/den rounded half away from zero to SignificantDigits significant
// digits. Both must be positive.
func divSignificant(num, den decimal.Decimal) decimal.Decimal {
	// A truncated quotient has the same leading digit position as the exact one.
	q, _ := num.QuoRem(den, 40)
	if q.IsZero() {
		return num.DivRound(den, 40)
	}
	lead := q.NumDigits() + int(q.Exponent()) - 1 // power of ten of the leading digit
	return num.DivRound(den, int32(SignificantDigits-1-lead))
}
