package rpc

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/billing"
	"modelgateway/core/store"
)

// GetCallerKey implements GET /v1/key: the calling key as it may see itself (contract: "Keys:
// limits, budgets, expiry"), from the snapshot that authenticated it and, for the spend and
// usage, the database. Never a secret: the key's prefix only.
func (s *CoreServer) GetCallerKey(ctx context.Context, _ *corev1.GetCallerKeyRequest) (*corev1.CallerKey, error) {
	snap, k, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.Deps.Ledger.DBTimeout)
	defer cancel()
	// The key's name and lists as stored: the snapshot keeps only what requests need.
	row, err := s.Store.GetKey(ctx, k.ID)
	if err != nil {
		return nil, unavailable(ctx, "read key", err)
	}
	now := time.Now().UTC()
	out := &corev1.CallerKey{
		Name: row.Name, Prefix: row.Prefix, AllowedEndpoints: row.AllowedEndpoints, AllowedModels: row.AllowedModels,
		MaxConcurrentRequests: row.MaxConcurrent, MaxRequestsPerSecond: row.MaxRPS, MaxTokensPerMinute: row.MaxTPM,
		Currency: snap.Currency,
	}
	if row.ExpireTime != nil {
		out.ExpireTime = timestamppb.New(*row.ExpireTime)
	}
	if b := row.Budget; b != nil {
		out.Budget = &corev1.CallerKeyBudget{Amount: b.Amount.String(), Period: b.Period}
		start, end := billing.Window(b.Period, now)
		spent, err := s.Store.BudgetSpent(ctx, k.ID, b.Period, start)
		if err != nil {
			return nil, unavailable(ctx, "read budget spend", err)
		}
		out.BudgetSpent = spent.String()
		if !end.IsZero() {
			out.BudgetResetsAt = timestamppb.New(end)
		}
	}
	month, _ := billing.Window(store.BudgetMonth, now)
	today, _ := billing.Window(store.BudgetDay, now)
	m, d, err := s.Store.KeyUsageSince(ctx, k.ProfileID, k.ID, month, today)
	if err != nil {
		return nil, unavailable(ctx, "read key usage", err)
	}
	out.Usage = &corev1.CallerKeyUsage{
		Today: &corev1.CallerKeyUsageWindow{Requests: d.Requests, Cost: d.Cost.String()},
		Month: &corev1.CallerKeyUsageWindow{Requests: m.Requests, Cost: m.Cost.String()},
	}
	return out, nil
}
