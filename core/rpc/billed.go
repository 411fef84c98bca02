package rpc

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"modelgateway/core/billing"
	"modelgateway/core/metering"
	"modelgateway/core/snapshot"
	"modelgateway/core/wire/apierror"
)

// billed is one request that passed the key checks: the outcome it is building, its price
// and its hold. Every priced RPC (Generate, Embed, Forward, each realtime response) goes
// through admit → hold → charge → finish, so the money rules live in one place.
type billed struct {
	s     *CoreServer
	ctx   context.Context
	snap  *snapshot.Snapshot
	k     *snapshot.Key
	m     *snapshot.Model
	out   Outcome
	price billing.Price
	hold  *billing.Hold
}

// admit authenticates the key, authorizes the family and model, and reserves a client-chosen
// request id (contract: an id is used once the key checks have passed, whatever the outcome;
// the gateway's own ids are unique by construction and cost no database round trip). The
// caller must call finish once admit has succeeded.
func (s *CoreServer) admit(ctx context.Context, family, model string) (*billed, error) {
	snap, k, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	m, apiErr := snap.Authorize(k, family, model)
	if apiErr != nil {
		return nil, apiErr
	}
	id, generated := requestID(ctx)
	b := &billed{s: s, ctx: ctx, snap: snap, k: k, m: m, out: Outcome{
		RequestID: id, KeyID: k.ID.String(), KeyPrefix: k.Prefix, ProfileID: k.ProfileID.String(), Currency: snap.Currency,
		Model: m.ID, EndpointFamily: family, StartTime: time.Now(), Status: "ok",
		Usage: metering.Unreliable("no upstream answered"),
	}}
	if !generated {
		ok, err := s.Store.ReserveRequestID(ctx, s.record(k, &b.out))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, apierror.New(apierror.DuplicateRequestID, "the request id %q was already used", id)
		}
	}
	return b, nil
}

// refuse records the spec code that refused the request and returns the error.
func (b *billed) refuse(e *apierror.Error) error {
	b.out.Status = e.Code
	return e
}

// checkParameters refuses optional parameters outside the model's verified list for the
// family (spec 2.3, 2.6).
func (b *billed) checkParameters(params []string) error {
	if e := checkParameters(b.m, b.out.EndpointFamily, params); e != nil {
		return b.refuse(e)
	}
	return nil
}

// checkParameters is the verified-parameter check; without a capability entry for the family
// everything passes (unknown is not unsupported).
func checkParameters(m *snapshot.Model, family string, params []string) *apierror.Error {
	c, ok := m.Capabilities[family]
	if !ok {
		return nil
	}
	for _, p := range params {
		if !slices.Contains(c.OptionalParameters, p) {
			return apierror.New(apierror.InvalidRequest, "the parameter %q is not supported by the model %q on %s", p, m.ID, family)
		}
	}
	return nil
}

// holdWorst finds the family's price and holds the worst case it computes: pricing_unavailable
// without a usable rule, insufficient_balance when the balance cannot cover it.
func (b *billed) holdWorst(needsOutput bool, worst func(billing.Price) decimal.Decimal) error {
	price, err := billing.Find(b.m.Prices, b.out.EndpointFamily, needsOutput)
	if err != nil {
		return b.refuse(apierror.New(apierror.PricingUnavailable, "the model %q has no price for %s", b.m.ID, b.out.EndpointFamily))
	}
	b.price = price
	amount := worst(price)
	b.hold, err = b.s.Gen.Ledger.Hold(b.ctx, b.k.ProfileID, amount)
	if errors.Is(err, billing.ErrInsufficient) {
		return b.refuse(apierror.New(apierror.InsufficientBalance, "the balance cannot cover this request (up to %s %s)", amount, b.snap.Currency))
	}
	return err
}

// charge prices the answer once its usage is known: reliable usage at the token rates, or the
// fixed price of a complete answer.
func (b *billed) charge(u metering.Usage) {
	b.out.Usage = u
	if u.Reliable || b.price.PerRequest {
		b.out.Cost = decimal.NullDecimal{Decimal: b.price.Cost(u), Valid: true}
	}
}

// uncharged marks an answer that must not be charged: cut, failed, or not delivered.
func (b *billed) uncharged(status, why string) {
	b.out.Status, b.out.Cost = status, decimal.NullDecimal{}
	b.out.Usage = metering.Unreliable(why)
}

// costString is the charge for the client's headers; empty when nothing is charged.
func (b *billed) costString() (cost, currency string) {
	if !b.out.Cost.Valid {
		return "", ""
	}
	return b.out.Cost.Decimal.String(), b.snap.Currency
}

// finish releases the hold and queues the record and its charge for settlement.
func (b *billed) finish() {
	b.s.finish(b.ctx, b.k, b.hold, &b.out)
}
