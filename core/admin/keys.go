package admin

// The key RPCs of the admin service: create, list, update, revoke, rotate.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "modelgateway/gen/gateway/admin/v1"

	"modelgateway/core/billing"
	"modelgateway/core/catalog"
	"modelgateway/core/keys"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

func keyProto(k *store.Key) *adminv1.Key {
	out := &adminv1.Key{
		Id: k.ID.String(), ProfileId: k.ProfileID.String(), Name: k.Name, Prefix: k.Prefix,
		AllowedEndpoints: k.AllowedEndpoints, AllowedModels: k.AllowedModels, State: k.State,
		CreateTime: timestamppb.New(k.CreateTime), MaxConcurrentRequests: k.MaxConcurrent, MaxRequestsPerSecond: k.MaxRPS,
		MaxTokensPerMinute: k.MaxTPM,
	}
	if k.ExpireTime != nil {
		out.ExpireTime = timestamppb.New(*k.ExpireTime)
	}
	if k.Budget != nil {
		out.Budget = &adminv1.Budget{Amount: k.Budget.Amount.String(), Period: k.Budget.Period}
	}
	return out
}

// keyWithSpend is keyProto with the budget's output fields: the current window's spend and
// when it resets.
func (s *Server) keyWithSpend(ctx context.Context, k *store.Key) (*adminv1.Key, error) {
	out := keyProto(k)
	if k.Budget == nil {
		return out, nil
	}
	start, end := billing.Window(k.Budget.Period, time.Now())
	spent, err := s.Store.BudgetSpent(ctx, k.ID, k.Budget.Period, start)
	if err != nil {
		return nil, err
	}
	out.BudgetSpent = spent.String()
	if !end.IsZero() {
		out.BudgetResetsAt = timestamppb.New(end)
	}
	return out, nil
}

// parseBudget reads a budget of CreateKey or UpdateKey: nil (none) for an absent one or an
// amount of 0.
func parseBudget(b *adminv1.Budget) (*store.Budget, error) {
	if b == nil || b.GetAmount() == "" && b.GetPeriod() == "" {
		return nil, nil
	}
	amount, err := decimal.NewFromString(b.GetAmount())
	if err != nil || amount.IsNegative() {
		return nil, apierror.New(apierror.InvalidRequest, "budget.amount: %q is not a decimal amount of 0 (no budget) or more", b.GetAmount())
	}
	if amount.IsZero() {
		return nil, nil
	}
	if amount.Exponent() < -9 || amount.GreaterThanOrEqual(decimal.New(1, 29)) {
		return nil, apierror.New(apierror.InvalidRequest, "budget.amount: %q has more than 9 fractional digits or is too large", b.GetAmount())
	}
	switch p := strings.ToUpper(b.GetPeriod()); p {
	case store.BudgetTotal, store.BudgetDay, store.BudgetWeek, store.BudgetMonth:
		return &store.Budget{Amount: amount, Period: p}, nil
	case "":
		return &store.Budget{Amount: amount, Period: store.BudgetMonth}, nil
	}
	return nil, apierror.New(apierror.InvalidRequest, "budget.period: %q is not TOTAL, DAY, WEEK or MONTH", b.GetPeriod())
}

// parseExpire reads an expire_time: nil for none.
func parseExpire(t *timestamppb.Timestamp) (*time.Time, error) {
	if t == nil {
		return nil, nil
	}
	if err := t.CheckValid(); err != nil {
		return nil, apierror.New(apierror.InvalidRequest, "expire_time: %v", err)
	}
	v := t.AsTime()
	return &v, nil
}

func validatePolicy(endpoints, models []string) error {
	if len(endpoints) == 0 {
		return apierror.New(apierror.InvalidRequest, "allowed_endpoints: at least one endpoint family or \"*\" is required")
	}
	for i, e := range endpoints {
		if e != snapshot.Wildcard && !catalog.IsEndpointFamily(e) {
			return apierror.New(apierror.InvalidRequest, "allowed_endpoints[%d]: %q is not an endpoint family", i, e)
		}
	}
	if len(models) == 0 {
		return apierror.New(apierror.InvalidRequest, "allowed_models: at least one model id or \"*\" is required")
	}
	for i, m := range models {
		if strings.TrimSpace(m) == "" {
			return apierror.New(apierror.InvalidRequest, "allowed_models[%d]: empty model id", i)
		}
	}
	return nil
}

// validateLimits checks a key's request limits: 0 is no limit, negatives mean nothing.
func validateLimits(concurrent, rps, tpm int32) error {
	if concurrent < 0 || rps < 0 || tpm < 0 {
		return apierror.New(apierror.InvalidRequest, "max_concurrent_requests, max_requests_per_second and max_tokens_per_minute must be 0 (no limit) or positive")
	}
	return nil
}

// CreateKey implements POST /admin/v1/profiles/{profile_id}/keys.
func (s *Server) CreateKey(ctx context.Context, req *adminv1.CreateKeyRequest) (*adminv1.CreateKeyResponse, error) {
	pid, err := parseID("profile_id", req.GetProfileId())
	if err != nil {
		return nil, err
	}
	if err := validatePolicy(req.GetAllowedEndpoints(), req.GetAllowedModels()); err != nil {
		return nil, err
	}
	if err := validateLimits(req.GetMaxConcurrentRequests(), req.GetMaxRequestsPerSecond(), req.GetMaxTokensPerMinute()); err != nil {
		return nil, err
	}
	budget, err := parseBudget(req.GetBudget())
	if err != nil {
		return nil, err
	}
	expire, err := parseExpire(req.GetExpireTime())
	if err != nil {
		return nil, err
	}
	if _, err := s.Store.GetProfile(ctx, pid); err != nil {
		return nil, storeError("profile", err)
	}
	sec, err := keys.New()
	if err != nil {
		return nil, fmt.Errorf("make secret: %w", err)
	}
	k, err := s.Store.CreateKey(ctx, &store.Key{
		ProfileID: pid, Name: req.GetName(), Prefix: sec.Prefix, SecretHash: sec.Hash[:],
		AllowedEndpoints: req.GetAllowedEndpoints(), AllowedModels: req.GetAllowedModels(),
		MaxConcurrent: req.GetMaxConcurrentRequests(), MaxRPS: req.GetMaxRequestsPerSecond(),
		MaxTPM: req.GetMaxTokensPerMinute(),
		Budget: budget, ExpireTime: expire,
	})
	if err != nil {
		return nil, storeError("key", err)
	}
	if err := s.changed(ctx); err != nil {
		return nil, err
	}
	out, err := s.keyWithSpend(ctx, k)
	if err != nil {
		return nil, err
	}
	return &adminv1.CreateKeyResponse{Key: out, Secret: sec.Plain}, nil
}

// ListKeys implements GET /admin/v1/profiles/{profile_id}/keys.
func (s *Server) ListKeys(ctx context.Context, req *adminv1.ListKeysRequest) (*adminv1.ListKeysResponse, error) {
	pid, err := parseID("profile_id", req.GetProfileId())
	if err != nil {
		return nil, err
	}
	if _, err := s.Store.GetProfile(ctx, pid); err != nil {
		return nil, storeError("profile", err)
	}
	ks, err := s.Store.ListKeys(ctx, pid)
	if err != nil {
		return nil, err
	}
	resp := &adminv1.ListKeysResponse{Keys: []*adminv1.Key{}}
	for _, k := range ks {
		out, err := s.keyWithSpend(ctx, k)
		if err != nil {
			return nil, err
		}
		resp.Keys = append(resp.Keys, out)
	}
	return resp, nil
}

// UpdateKey implements PATCH /admin/v1/keys/{id}. Without an update_mask (gRPC callers) the
// non-empty fields are updated; over HTTP grpc-gateway derives the mask from the body.
func (s *Server) UpdateKey(ctx context.Context, req *adminv1.UpdateKeyRequest) (*adminv1.Key, error) {
	in := req.GetKey()
	id, err := parseID("id", in.GetId())
	if err != nil {
		return nil, err
	}
	paths := req.GetUpdateMask().GetPaths()
	if len(paths) == 0 {
		if in.GetName() != "" {
			paths = append(paths, "name")
		}
		if len(in.GetAllowedEndpoints()) > 0 {
			paths = append(paths, "allowed_endpoints")
		}
		if len(in.GetAllowedModels()) > 0 {
			paths = append(paths, "allowed_models")
		}
		if in.GetMaxConcurrentRequests() != 0 {
			paths = append(paths, "max_concurrent_requests")
		}
		if in.GetMaxRequestsPerSecond() != 0 {
			paths = append(paths, "max_requests_per_second")
		}
		if in.GetMaxTokensPerMinute() != 0 {
			paths = append(paths, "max_tokens_per_minute")
		}
		if in.GetBudget() != nil {
			paths = append(paths, "budget")
		}
		if in.GetExpireTime() != nil {
			paths = append(paths, "expire_time")
		}
	}
	var u store.KeyUpdate
	for _, p := range paths {
		switch p {
		case "id":
		case "name":
			name := in.GetName()
			u.Name = &name
		case "allowed_endpoints":
			u.AllowedEndpoints = in.GetAllowedEndpoints()
		case "allowed_models":
			u.AllowedModels = in.GetAllowedModels()
		case "max_concurrent_requests":
			v := in.GetMaxConcurrentRequests()
			u.MaxConcurrent = &v
		case "max_requests_per_second":
			v := in.GetMaxRequestsPerSecond()
			u.MaxRPS = &v
		case "max_tokens_per_minute":
			v := in.GetMaxTokensPerMinute()
			u.MaxTPM = &v
		case "budget", "budget.amount", "budget.period":
			// The budget is replaced whole (grpc-gateway names its fields one by one).
			b, err := parseBudget(in.GetBudget())
			if err != nil {
				return nil, err
			}
			u.SetBudget, u.Budget = true, b
		case "expire_time":
			t, err := parseExpire(in.GetExpireTime())
			if err != nil {
				return nil, err
			}
			u.SetExpire, u.ExpireTime = true, t
		case "budget_spent", "budget_resets_at":
			return nil, apierror.New(apierror.InvalidRequest, "%s: output only", p)
		default:
			return nil, apierror.New(apierror.InvalidRequest, "%s: cannot be updated", p)
		}
	}
	if u.Name == nil && u.AllowedEndpoints == nil && u.AllowedModels == nil && u.MaxConcurrent == nil && u.MaxRPS == nil && u.MaxTPM == nil && !u.SetBudget && !u.SetExpire {
		return nil, apierror.New(apierror.InvalidRequest, "nothing to update: give name, allowed_endpoints, allowed_models, a request or token limit, budget or expire_time")
	}
	if err := validateLimits(in.GetMaxConcurrentRequests(), in.GetMaxRequestsPerSecond(), in.GetMaxTokensPerMinute()); err != nil {
		return nil, err
	}
	cur, err := s.Store.GetKey(ctx, id)
	if err != nil {
		return nil, storeError("key", err)
	}
	endpoints, models := cur.AllowedEndpoints, cur.AllowedModels
	if slices.Contains(paths, "allowed_endpoints") {
		endpoints = u.AllowedEndpoints
		if endpoints == nil {
			endpoints = []string{}
			u.AllowedEndpoints = endpoints
		}
	}
	if slices.Contains(paths, "allowed_models") {
		models = u.AllowedModels
		if models == nil {
			models = []string{}
			u.AllowedModels = models
		}
	}
	if err := validatePolicy(endpoints, models); err != nil {
		return nil, err
	}
	k, err := s.Store.UpdateKey(ctx, id, u)
	if err != nil {
		return nil, storeError("key", err)
	}
	if err := s.changed(ctx); err != nil {
		return nil, err
	}
	return s.keyWithSpend(ctx, k)
}

// RevokeKey implements POST /admin/v1/keys/{id}:revoke.
func (s *Server) RevokeKey(ctx context.Context, req *adminv1.RevokeKeyRequest) (*adminv1.Key, error) {
	id, err := parseID("id", req.GetId())
	if err != nil {
		return nil, err
	}
	k, err := s.Store.RevokeKey(ctx, id)
	if err != nil {
		return nil, storeError("key", err)
	}
	if err := s.changed(ctx); err != nil {
		return nil, err
	}
	return keyProto(k), nil
}

// RotateKey implements POST /admin/v1/keys/{id}:rotate.
func (s *Server) RotateKey(ctx context.Context, req *adminv1.RotateKeyRequest) (*adminv1.RotateKeyResponse, error) {
	id, err := parseID("id", req.GetId())
	if err != nil {
		return nil, err
	}
	sec, err := keys.New()
	if err != nil {
		return nil, fmt.Errorf("make secret: %w", err)
	}
	k, err := s.Store.RotateKey(ctx, id, sec.Prefix, sec.Hash[:])
	if err != nil {
		return nil, storeError("key", err)
	}
	if err := s.changed(ctx); err != nil {
		return nil, err
	}
	out, err := s.keyWithSpend(ctx, k)
	if err != nil {
		return nil, err
	}
	return &adminv1.RotateKeyResponse{Key: out, Secret: sec.Plain}, nil
}

// GetKey implements GET /admin/v1/keys/{id}.
func (s *Server) GetKey(ctx context.Context, req *adminv1.GetKeyRequest) (*adminv1.Key, error) {
	id, err := parseID("id", req.GetId())
	if err != nil {
		return nil, err
	}
	k, err := s.Store.GetKey(ctx, id)
	if err != nil {
		return nil, storeError("key", err)
	}
	return s.keyWithSpend(ctx, k)
}
