package billing

import (
	"math/bits"

	"github.com/shopspring/decimal"
)

// amount is an exact sum of money in an account's books (its lease, holds, unsettled charges
// and recent use): n units of 10^-Scale while the value is a whole number of them and fits in
// 64 bits, the decimal itself otherwise. Every hold and charge adds to and subtracts from
// these sums under the ledger's lock; as decimals each step allocated a big integer and its
// words (about twenty allocations a request), while the amounts of real requests are whole
// nanos far inside int64. Anything else (more digits, a sum beyond 2^63) is worked out with
// decimals as before, so the results are the same values either way.
type amount struct {
	n    int64
	d    decimal.Decimal // the value when wide
	wide bool
}

// amountOf is d as an amount; it allocates nothing.
func amountOf(d decimal.Decimal) amount {
	if d.NumDigits() > maxDigits {
		return amount{d: d, wide: true}
	}
	c, e := d.CoefficientInt64(), d.Exponent()+Scale // d = c × 10^(e-Scale)
	switch {
	case e == 0:
		return amount{n: c}
	case e > 0 && e <= maxDigits:
		neg := c < 0
		u := uint64(c)
		if neg {
			u = -u
		}
		hi, v := bits.Mul64(u, pow10[e])
		if hi != 0 || v > 1<<63-1 {
			break
		}
		if neg {
			return amount{n: -int64(v)}
		}
		return amount{n: int64(v)}
	case e < 0 && -e <= maxDigits:
		// More than Scale digits after the point: a whole number of nanos only when the
		// digits beyond are zeros (a value read back from the database's numeric).
		if p := int64(pow10[-e]); c%p == 0 {
			return amount{n: c / p}
		}
	}
	return amount{d: d, wide: true}
}

// dec is the amount as a decimal, of exponent -Scale unless wide.
func (a amount) dec() decimal.Decimal {
	if a.wide {
		return a.d
	}
	return decimal.New(a.n, -Scale)
}

func (a amount) add(b amount) amount {
	if !a.wide && !b.wide {
		if s := a.n + b.n; (s > a.n) == (b.n > 0) {
			return amount{n: s}
		}
	}
	return amountOf(a.dec().Add(b.dec()))
}

func (a amount) sub(b amount) amount {
	if !a.wide && !b.wide {
		if s := a.n - b.n; (s < a.n) == (b.n > 0) {
			return amount{n: s}
		}
	}
	return amountOf(a.dec().Sub(b.dec()))
}

// times is a×k for a small k >= 0.
func (a amount) times(k int64) amount {
	if !a.wide {
		if a.n == 0 || k == 0 {
			return amount{}
		}
		if p := a.n * k; p/k == a.n && (p < 0) == (a.n < 0) {
			return amount{n: p}
		}
	}
	return amountOf(a.dec().Mul(decimal.NewFromInt(k)))
}

// cmp is -1, 0 or +1 as a is less than, equal to or greater than b.
func (a amount) cmp(b amount) int {
	if !a.wide && !b.wide {
		switch {
		case a.n < b.n:
			return -1
		case a.n > b.n:
			return 1
		}
		return 0
	}
	return a.dec().Cmp(b.dec())
}

func (a amount) sign() int {
	if a.wide {
		return a.d.Sign()
	}
	switch {
	case a.n < 0:
		return -1
	case a.n > 0:
		return 1
	}
	return 0
}

func (a amount) isZero() bool { return a.sign() == 0 }

func maxAmount(a, b amount) amount {
	if a.cmp(b) >= 0 {
		return a
	}
	return b
}
