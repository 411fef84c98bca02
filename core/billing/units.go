package billing

// Token prices at the money scale without big integers. Catalogue rates have a few
// decimals (and the database keeps them at Scale digits), so a rate per 1M tokens is almost
// always a whole number of 10^-Scale units per token, and a request's price a whole number
// of units: it is computed exactly in int64, every step checked for overflow, and becomes a
// decimal once, at exponent -Scale, which is what rounding the big-integer sum to Scale
// digits gives. Whatever does not fit takes the big-integer form (tokens' fallback, then
// Round); the value and the exponent are the same either way (tokens_test.go).

import (
	"math"

	"github.com/shopspring/decimal"
)

// term is a count of tokens and its rate per 1M tokens.
type term struct {
	n    int64
	rate decimal.Decimal
}

// exactUnits is the price of the terms in 10^-Scale units when each term's is a whole
// number of units and everything fits an int64.
func exactUnits(terms []term) (int64, bool) {
	var sum int64
	for _, t := range terms {
		if t.n == 0 {
			continue
		}
		unit, ok := perToken(t.rate)
		if !ok {
			return 0, false
		}
		v, ok := mul64(t.n, unit)
		if !ok {
			return 0, false
		}
		s := sum + v
		if (v > 0 && s < sum) || (v < 0 && s > sum) {
			return 0, false
		}
		sum = s
	}
	return sum, true
}

// tokens is the price of n tokens at rate per 1M tokens, n*rate/10^6, exactly: at exponent
// -Scale when it is a whole number of units that fits an int64 (a sum of such terms then
// needs no rounding: Round returns a decimal at its scale as it is), else n at exponent -6
// times the rate, as before.
func tokens(n int64, rate decimal.Decimal) decimal.Decimal {
	if unit, ok := perToken(rate); ok {
		if v, ok := mul64(n, unit); ok {
			return decimal.New(v, -Scale)
		}
	}
	return decimal.New(n, -6).Mul(rate)
}

// perToken is rate (per 1M tokens) in 10^-Scale units per token, rate*10^(Scale-6), when that
// is a whole number that fits an int64.
func perToken(rate decimal.Decimal) (int64, bool) {
	if rate.NumDigits() > 18 {
		return 0, false // the coefficient may not fit an int64
	}
	c := rate.CoefficientInt64()
	for e := rate.Exponent() + Scale - 6; e != 0; {
		switch {
		case e < 0 && c%10 != 0:
			return 0, false // a fraction of a unit
		case e < 0:
			c, e = c/10, e+1
		case c > math.MaxInt64/10 || c < math.MinInt64/10:
			return 0, false
		default:
			c, e = c*10, e-1
		}
	}
	return c, true
}

// mul64 is a*b unless it overflows an int64.
func mul64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	p := a * b
	if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, false
	}
	return p, true
}
