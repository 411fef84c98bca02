// Package billing prices usage and moves money: worst-case holds before a request goes
// upstream, exact charges after it, through a per-replica ledger that leases slices of each
// profile's balance from PostgreSQL and settles charges in batches (see ledger.go).
package billing

import (
	"errors"
	"slices"

	"github.com/shopspring/decimal"

	"modelgateway/core/metering"
	"modelgateway/core/store"
)

// Scale is the number of fractional digits money is kept to (the numeric(38,9) columns).
const Scale = 9

// DefaultOutputTokens is the output limit assumed for a hold when neither the request nor the
// model sets one; the translating adapters send the same default upstream.
const DefaultOutputTokens = 8192

// ErrNoPrice is pricing_unavailable: the (model, family) has no usable active price.
var ErrNoPrice = errors.New("no usable price")

// Price is the active price rule of one (model, endpoint family).
type Price struct {
	PerRequest bool
	// Per 1M tokens; CachedInput and CacheWrite fall back to Input when the catalogue leaves
	// them unpriced, so a cache hit is never free by accident.
	Input, CachedInput, CacheWrite, Output decimal.Decimal
	// The audio parts of input and output; the text rates when the catalogue sets none.
	AudioInput, AudioOutput decimal.Decimal
	Request                 decimal.Decimal
}

// Find picks the first active price set covering the family. A per-token rule needs input and
// output prices, a per-request rule its request price; an explicit zero is a price.
func Find(prices []store.Price, family string, needsOutput bool) (Price, error) {
	for _, p := range prices {
		if !slices.Contains(p.EndpointFamilies, family) {
			continue
		}
		switch p.BillingMode {
		case "per_request":
			if p.Request.Valid {
				return Price{PerRequest: true, Request: p.Request.Decimal}, nil
			}
		case "per_token":
			if !p.Input.Valid || (needsOutput && !p.Output.Valid) {
				continue
			}
			out := Price{Input: p.Input.Decimal, CachedInput: p.Input.Decimal, CacheWrite: p.Input.Decimal, Output: p.Output.Decimal,
				AudioInput: p.Input.Decimal, AudioOutput: p.Output.Decimal}
			if p.AudioInput.Valid {
				out.AudioInput = p.AudioInput.Decimal
			}
			if p.AudioOutput.Valid {
				out.AudioOutput = p.AudioOutput.Decimal
			}
			if p.CachedInput.Valid {
				out.CachedInput = p.CachedInput.Decimal
			}
			if p.CacheWrite.Valid {
				out.CacheWrite = p.CacheWrite.Decimal
			}
			return out, nil
		}
	}
	return Price{}, ErrNoPrice
}

// Cost prices reliable usage: each of the four disjoint categories at its own rate (the audio
// parts of input and output at theirs), summed exactly, then rounded half away from zero to
// Scale digits once, at the end.
func (p Price) Cost(u metering.Usage) decimal.Decimal {
	if p.PerRequest {
		return p.Request
	}
	terms := [...]term{
		{u.Input - u.AudioInput, p.Input}, {u.AudioInput, p.AudioInput}, {u.CachedInput, p.CachedInput},
		{u.CacheWrite, p.CacheWrite}, {u.Output - u.AudioOutput, p.Output}, {u.AudioOutput, p.AudioOutput},
	}
	if cost, ok := sumNanos(terms[:], halfUp); ok {
		return cost
	}
	return sumDecimal(terms[:]).Round(Scale)
}

// sumDecimal is the terms' sum with decimals (before rounding), for what sumNanos cannot do.
// Categories without tokens add nothing (most answers have no cache or audio parts), and the
// rounding at the end fixes the scale whatever the terms' own: they are skipped.
func sumDecimal(terms []term) decimal.Decimal {
	var sum decimal.Decimal
	some := false
	for _, t := range terms {
		if t.n == 0 {
			continue
		}
		// The first term is the sum so far: adding it to a zero would rescale the zero and
		// allocate a sum for nothing.
		if term := decimal.NewFromInt(t.n).Mul(t.rate); some {
			sum = sum.Add(term)
		} else {
			sum, some = term, true
		}
	}
	return sum.Shift(-6)
}

// WorstCase is the hold for a request: every input token at the dearest input rate plus the
// whole output limit at the output rate, rounded up so that the hold is never below the cost.
func (p Price) WorstCase(inputTokens, outputLimit int64) decimal.Decimal {
	if p.PerRequest {
		return p.Request
	}
	terms := p.worstTerms(inputTokens, outputLimit)
	if hold, ok := sumNanos(terms[:], ceil); ok {
		return hold
	}
	return sumDecimal(terms[:]).RoundCeil(Scale)
}

// worstAmount is WorstCase in the books' form (amountOf(p.WorstCase(...))), without the
// decimal where the sum fits in nanos.
func (p Price) worstAmount(inputTokens, outputLimit int64) amount {
	if p.PerRequest {
		return amountOf(p.Request)
	}
	terms := p.worstTerms(inputTokens, outputLimit)
	if n, ok := sumToNanos(terms[:], ceil); ok {
		return amount{n: n}
	}
	return amountOf(sumDecimal(terms[:]).RoundCeil(Scale))
}

// worstTerms are WorstCase's: every input token at the dearest input rate, the output limit
// at the dearest output rate.
func (p Price) worstTerms(inputTokens, outputLimit int64) [2]term {
	return [...]term{
		{inputTokens, decimal.Max(p.Input, p.CachedInput, p.CacheWrite, p.AudioInput)},
		{outputLimit, decimal.Max(p.Output, p.AudioOutput)},
	}
}

// InputEstimate is the input side of a hold, from the body size: half a token per byte is well
// above what tokenizers produce for text (about a quarter) and JSON framing inflates the body
// further, plus a little for provider framing. It costs nothing on the hot path, unlike
// running a tokenizer. A charge is always the measured cost, even in the pathological case
// where it exceeds the hold.
func InputEstimate(bodyBytes int) int64 { return int64(bodyBytes)/2 + 64 }
