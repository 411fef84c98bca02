package billing

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"modelgateway/core/wire/clock"
)

// amountEdges are values around every boundary of amount's integer form: zero, a nano,
// digits beyond the nano (zeros and not), the ends of int64 in nanos, more than 18 digits,
// positive exponents, and the negatives of them all.
var amountEdges = func() []decimal.Decimal {
	var ds []decimal.Decimal
	for _, s := range []string{
		"0", "0.000000001", "0.0000000010", "0.0000000015", "0.0000000001", "1", "0.5", "0.750000001",
		"2.000000000", "12.3456789", "1e3", "1e9", "1e10", "5e20", "123456789012345678",
		"9223372036.854775807", "9223372036.854775808", "9223372036.854775806", "4611686018.427387904",
		"922337203.6854775807", "99999999999999999999.999999999", "1.0000000000000000000001",
	} {
		d := decimal.RequireFromString(s)
		ds = append(ds, d, d.Neg())
	}
	// The extremes of int64 in nanos exactly, as decimals of other exponents too.
	ds = append(ds, decimal.New(1<<63-1, -Scale), decimal.New(-1<<63, -Scale), decimal.New(-1<<63+1, -Scale),
		decimal.New(1<<62, -Scale+1), decimal.New(7, -Scale-3), decimal.New(7000, -Scale-3), decimal.Decimal{})
	return ds
}()

// Every operation of amount gives what the same decimal operation gives, exactly, whether the
// operands take the integer form or not, including sums and products beyond int64.
func TestAmountIsTheDecimalsArithmetic(t *testing.T) {
	t.Parallel()
	for _, x := range amountEdges {
		ax := amountOf(x)
		if !ax.dec().Equal(x) {
			t.Fatalf("amountOf(%s) is %s", x, ax.dec())
		}
		if ax.sign() != x.Sign() || ax.isZero() != x.IsZero() {
			t.Errorf("sign of %s: %d, want %d", x, ax.sign(), x.Sign())
		}
		for _, k := range []int64{0, 1, 2, 5, 1 << 40} {
			if got, want := ax.times(k).dec(), x.Mul(decimal.NewFromInt(k)); !got.Equal(want) {
				t.Errorf("%s × %d = %s, want %s", x, k, got, want)
			}
		}
		for _, y := range amountEdges {
			ay := amountOf(y)
			if got, want := ax.add(ay).dec(), x.Add(y); !got.Equal(want) {
				t.Errorf("%s + %s = %s, want %s", x, y, got, want)
			}
			if got, want := ax.sub(ay).dec(), x.Sub(y); !got.Equal(want) {
				t.Errorf("%s - %s = %s, want %s", x, y, got, want)
			}
			if got, want := ax.cmp(ay), x.Cmp(y); got != want {
				t.Errorf("cmp(%s, %s) = %d, want %d", x, y, got, want)
			}
			if got, want := maxAmount(ax, ay).dec(), decimal.Max(x, y); !got.Equal(want) {
				t.Errorf("max(%s, %s) = %s, want %s", x, y, got, want)
			}
		}
	}
}

// Whole nanos of at most 18 digits take the integer form, whatever their decimal's exponent,
// and anything else the decimal's; the integer form's operations allocate nothing.
func TestAmountTakesTheIntegerFormWhereItIsExact(t *testing.T) {
	for _, c := range []struct {
		in   string
		wide bool
	}{
		{"0", false}, {"0.5", false}, {"0.750000001", false}, {"0.0000000010", false}, {"1e9", false}, {"-922337203.685477580", false},
		{"-9223372036.854775808", true}, {"1e10", true}, {"9223372036.854775808", true},
		{"0.0000000015", true}, {"5e20", true}, {"123456789012345678", true},
	} {
		if got := amountOf(decimal.RequireFromString(c.in)).wide; got != c.wide {
			t.Errorf("amountOf(%s).wide = %v, want %v", c.in, got, c.wide)
		}
	}
	a, b := amountOf(decimal.RequireFromString("2.5")), amountOf(decimal.New(125, -3))
	if a.wide || b.wide {
		t.Fatal("small amounts are wide")
	}
	var sink amount
	if n := testing.AllocsPerRun(100, func() {
		sink = maxAmount(a.add(b).sub(b).times(lowWindows), amountOf(decimal.Zero))
		_ = sink.cmp(a)
	}); n != 0 {
		t.Errorf("%v allocations for the integer form's arithmetic, want 0", n)
	}
	// A product beyond int64 goes wide, and a difference that fits again comes back.
	x := amountOf(decimal.New(999_999_999_999_999_999, -Scale))
	if x.wide {
		t.Fatal("18 digits are wide")
	}
	if p := x.times(10); !p.wide {
		t.Error("a product beyond int64 is not wide")
	} else if back := p.sub(x.times(9)); back.wide || back.n != 999_999_999_999_999_999 {
		t.Errorf("the product less nine times x is %+v", back)
	}
	if s := x.times(9).add(x).add(x); !s.wide || !s.dec().Equal(x.dec().Mul(decimal.NewFromInt(11))) {
		t.Errorf("a sum beyond int64 is %+v", s)
	}
}

// BenchmarkAccountBooks is what a request does to its account's books under the ledger's
// lock: a hold taken from the lease (the holds, the room left, the recent use and the check
// for a growth beside), a charge above the hold covered, and the hold released; with the
// decimals the books were kept in before and with amount.
func BenchmarkAccountBooks(b *testing.B) {
	hold, cost := decimal.New(123_456, -Scale), decimal.New(234_567, -Scale)
	lowFactor := decimal.NewFromInt(lowWindows)
	b.Run("decimal", func(b *testing.B) {
		b.ReportAllocs()
		lease, held, used, spent := decimal.RequireFromString("25"), decimal.Zero, decimal.Zero, decimal.Zero
		take := func(x decimal.Decimal) {
			h := held.Add(x)
			room := lease.Sub(h)
			if !spent.IsZero() {
				room = room.Sub(spent)
			}
			if room.Sign() >= 0 {
				held = h
				used = used.Add(x)
				if room.LessThan(decimal.Max(used, decimal.Zero).Mul(lowFactor)) {
					used = decimal.Zero
				}
			}
		}
		for b.Loop() {
			take(hold)
			if !cost.LessThanOrEqual(hold) {
				take(cost.Sub(hold))
			}
			held = held.Sub(cost)
		}
	})
	b.Run("amount", func(b *testing.B) {
		b.ReportAllocs()
		a := &account{lease: amountOf(decimal.RequireFromString("25")), deadline: clock.Mono() + int64(time.Hour)}
		take := func(x amount) {
			now := int64(0) // as the zero time.Time it was: before the deadline, one window
			if held, room, fits := a.fit(now, x); fits {
				a.held = held
				a.use(now, x)
				if room.cmp(a.recentUse().times(lowWindows)) < 0 {
					a.used = amount{}
				}
			}
		}
		for b.Loop() {
			take(amountOf(hold))
			want, have := amountOf(cost), amountOf(hold)
			if want.cmp(have) > 0 {
				take(want.sub(have))
			}
			a.held = a.held.sub(amountOf(cost))
		}
	})
}
