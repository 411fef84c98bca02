package billing

import (
	"math"
	"math/bits"

	"github.com/shopspring/decimal"
)

// Exact integer arithmetic for the two prices of every request, a hold's worst case and a
// charge's cost. Both are sums of token counts times rates per 1M tokens, rounded once to
// Scale digits. Done with decimals they cost a dozen big-integer allocations each (a
// product, a sum and a rescale per term); the amounts of real requests fit in 64 bits many
// times over, so they are summed here as integers, exactly, and only the result becomes a
// decimal. Anything that does not fit (a negative count or rate, a rate of more than 18
// digits, a sum beyond 2^63) reports !ok and is priced with decimals as before.

// term is tokens at a rate per 1M tokens.
type term struct {
	n    int64
	rate decimal.Decimal
}

// rounding of the sum to Scale digits.
type rounding int

const (
	halfUp rounding = iota // half away from zero (the sum is never negative here)
	ceil                   // towards +infinity
)

// maxDigits bounds the coefficients and powers of ten taken on: 10^18 < 2^63.
const maxDigits = 18

var pow10 = [maxDigits + 1]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14,
	1e15, 1e16, 1e17, 1e18}

// sumNanos is the sum of the terms' prices rounded to Scale digits, as a decimal of exponent
// -Scale, or !ok when it cannot be worked out in 64 bits. Terms without tokens add nothing.
func sumNanos(terms []term, mode rounding) (decimal.Decimal, bool) {
	n, ok := sumToNanos(terms, mode)
	if !ok {
		return decimal.Decimal{}, false
	}
	return decimal.New(n, -Scale), true
}

// sumToNanos is sumNanos in units of 10^-Scale.
func sumToNanos(terms []term, mode rounding) (int64, bool) {
	// A rate c×10^e per 1M tokens makes n tokens cost n×c×10^(e-6), which is n×c×10^(e+3) in
	// units of 10^-Scale. The terms are summed exactly at the smallest of those exponents, low
	// (never above zero), and the sum then divided by 10^-low with the rounding.
	low := int32(0)
	for _, t := range terms {
		if t.n == 0 {
			continue
		}
		if t.n < 0 || t.rate.Sign() < 0 || t.rate.NumDigits() > maxDigits {
			return 0, false
		}
		low = min(low, t.rate.Exponent()-6+Scale)
	}
	if -low > maxDigits {
		return 0, false
	}
	var sum uint64
	for _, t := range terms {
		if t.n == 0 {
			continue
		}
		shift := t.rate.Exponent() - 6 + Scale - low // >= 0
		if shift > maxDigits {
			return 0, false
		}
		hi, v := bits.Mul64(uint64(t.n), uint64(t.rate.CoefficientInt64()))
		if hi != 0 {
			return 0, false
		}
		if hi, v = bits.Mul64(v, pow10[shift]); hi != 0 {
			return 0, false
		}
		var carry uint64
		if sum, carry = bits.Add64(sum, v, 0); carry != 0 {
			return 0, false
		}
	}
	unit := pow10[-low]
	q, r := sum/unit, sum%unit
	// Plain ifs, not a tagless switch: coverage tools count a case expression as never run,
	// which would hide the rounding from mutation testing.
	if mode == ceil && r > 0 {
		q++
	}
	if mode == halfUp && r >= unit-r { // r >= unit/2, without rounding unit/2 down
		q++
	}
	if q > math.MaxInt64 {
		return 0, false
	}
	return int64(q), true
}
