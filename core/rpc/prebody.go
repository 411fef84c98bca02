package rpc

import (
	"context"
	"errors"
	"strings"

	"github.com/shopspring/decimal"

	"modelgateway/core/billing"
	"modelgateway/core/snapshot"
	"modelgateway/core/wire/apierror"
)

// smallestHold is the least any request of the family can hold on the model (nil: on any
// model the key may use there): the input estimate of an empty body and no output at the
// cheapest price rule that could apply. Every priced RPC holds at least that much, so a
// profile that cannot pay it would be refused after the body anyway. Zero when some model
// is free or unpriced (pricing_unavailable is decided with the body) and for the free
// token-counting families.
func smallestHold(snap *snapshot.Snapshot, k *snapshot.Key, family string, m *snapshot.Model) decimal.Decimal {
	if strings.HasSuffix(family, "count_tokens") {
		return decimal.Zero
	}
	models := []*snapshot.Model{m}
	if m == nil {
		models = snap.VisibleModels(k, family)
	}
	var least decimal.Decimal
	for i, m := range models {
		h, priced := modelSmallestHold(m, family)
		if !priced {
			return decimal.Zero
		}
		if i == 0 || h.LessThan(least) {
			least = h
		}
	}
	return least
}

// modelSmallestHold is the smaller of the holds at the price rule a generation finds and the
// one the other routes find (they may differ when a rule lacks an output price).
func modelSmallestHold(m *snapshot.Model, family string) (decimal.Decimal, bool) {
	var least decimal.Decimal
	priced := false
	for _, needsOutput := range []bool{false, true} {
		p, err := billing.Find(m.Prices, family, needsOutput)
		if err != nil {
			continue
		}
		h := p.WorstCase(billing.InputEstimate(0), 0)
		if !priced || h.LessThan(least) {
			least = h
		}
		priced = true
	}
	return least, priced
}

// checkBalance refuses, before the body is read, a key whose profile cannot pay the smallest
// hold of the route. When the ledger cannot decide (the database is away, the client left)
// the request goes on: its own hold then answers.
func (s *CoreServer) checkBalance(ctx context.Context, snap *snapshot.Snapshot, k *snapshot.Key, family string, m *snapshot.Model) error {
	least := smallestHold(snap, k, family, m)
	if !least.IsPositive() {
		return nil
	}
	if err := s.Deps.Ledger.Covers(ctx, k.ProfileID, least); errors.Is(err, billing.ErrInsufficient) {
		return apierror.New(apierror.InsufficientBalance, "the balance cannot cover a request on this route (at least %s %s)", least, snap.Currency)
	}
	return nil
}
