package billing

import (
	"math/bits"
	"strconv"

	"github.com/shopspring/decimal"
)

// AppendDecimal appends d as d.String() writes it (no exponent, the fraction's trailing
// zeros dropped). Decimal.String formats through the big integer (a digit buffer, the string
// of the coefficient and the pieces joined: three allocations or more, on every answer's cost
// header and access line); a coefficient of at most 18 digits, every real amount, is written
// here from its int64 with none. Anything larger goes through String as before.
func AppendDecimal(dst []byte, d decimal.Decimal) []byte {
	if d.NumDigits() > maxDigits {
		return append(dst, d.String()...)
	}
	c, e := d.CoefficientInt64(), d.Exponent()
	if e >= 0 {
		if e > maxDigits {
			return append(dst, d.String()...)
		}
		neg := c < 0
		u := uint64(c)
		if neg {
			u = -u
		}
		hi, v := bits.Mul64(u, pow10[e])
		if hi != 0 {
			return append(dst, d.String()...)
		}
		if neg && v != 0 {
			dst = append(dst, '-')
		}
		return strconv.AppendUint(dst, v, 10)
	}
	if c < 0 {
		dst = append(dst, '-')
		c = -c // more than -2^63: at most 18 digits
	}
	var buf [20]byte
	digits := strconv.AppendInt(buf[:0], c, 10)
	frac := int(-e) // digits after the point
	var intPart, fraction []byte
	var zeros int
	if len(digits) > frac {
		intPart, fraction = digits[:len(digits)-frac], digits[len(digits)-frac:]
	} else {
		intPart, zeros, fraction = []byte{'0'}, frac-len(digits), digits
	}
	for len(fraction) > 0 && fraction[len(fraction)-1] == '0' {
		fraction = fraction[:len(fraction)-1]
	}
	dst = append(dst, intPart...)
	if len(fraction) == 0 {
		return dst
	}
	dst = append(dst, '.')
	for range zeros {
		dst = append(dst, '0')
	}
	return append(dst, fraction...)
}

// FormatDecimal is d.String() with one allocation (the string) where AppendDecimal has its
// fast path.
func FormatDecimal(d decimal.Decimal) string {
	var buf [48]byte
	return string(AppendDecimal(buf[:0], d))
}
