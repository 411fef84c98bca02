package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "modelgateway/gen/gateway/admin/v1"

	"modelgateway/core/catalog"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// Server implements the operator API of contract.md.
type Server struct {
	adminv1.UnimplementedAdminServiceServer
	Store     *store.Store
	Snapshots *snapshot.Holder
	// Verifier probes capabilities for VerifyCapabilities (verify.go); nil disables it.
	Verifier Verifier
	// Env reads provider credentials, to warn about unset ones; os.Getenv when nil.
	Env func(string) string
}

// Amounts are exact to 9 fractional digits and bounded by the numeric(38,9) columns.
var maxAmount = decimal.New(1, 18)

func parseAmount(field, s string) (decimal.Decimal, error) {
	d, err := decimal.NewFromString(strings.TrimSpace(s))
	if err != nil {
		return d, apierror.New(apierror.InvalidRequest, "%s: %q is not a decimal amount", field, s)
	}
	if d.Exponent() < -9 && !d.Equal(d.Truncate(9)) {
		return d, apierror.New(apierror.InvalidRequest, "%s: more than 9 fractional digits", field)
	}
	if d.Abs().GreaterThanOrEqual(maxAmount) {
		return d, apierror.New(apierror.InvalidRequest, "%s: amount out of range", field)
	}
	return d, nil
}

func parseID(field, s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return id, apierror.New(apierror.InvalidRequest, "%s: %q is not a valid id", field, s)
	}
	return id, nil
}

// storeError turns the store's sentinel errors into spec errors naming what was missing.
func storeError(what string, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return apierror.New(apierror.NotFound, "%s not found", what)
	case errors.Is(err, store.ErrAlreadyExists):
		return apierror.New(apierror.AlreadyExists, "%s already exists", what)
	case errors.Is(err, store.ErrKeyRevoked):
		return apierror.New(apierror.FailedPrecondition, "the key is revoked")
	}
	return err
}

func profileProto(p *store.Profile) *adminv1.Profile {
	return &adminv1.Profile{
		Id: p.ID.String(), DisplayName: p.DisplayName, ExternalRef: p.ExternalRef,
		Balance: p.Balance.String(), Available: p.Balance.String(), Currency: p.Currency,
		CreateTime: timestamppb.New(p.CreateTime),
	}
}

// profileWithAvailable is profileProto with available = balance less what replicas hold and
// reserve in unexpired leases (contract: Profile.balance is the ledger balance).
func (s *Server) profileWithAvailable(ctx context.Context, p *store.Profile) (*adminv1.Profile, error) {
	out := profileProto(p)
	avail, err := s.Store.Available(ctx, p.ID)
	if err != nil {
		return nil, fmt.Errorf("read available balance: %w", err)
	}
	out.Available = avail.String()
	return out, nil
}

// changed makes this replica's snapshot current before the admin call answers; the others
// follow through NOTIFY.
func (s *Server) changed(ctx context.Context) error {
	if err := s.Snapshots.Reload(ctx); err != nil {
		return fmt.Errorf("reload snapshot after change: %w", err)
	}
	return nil
}

// CreateProfile implements POST /admin/v1/profiles.
func (s *Server) CreateProfile(ctx context.Context, req *adminv1.CreateProfileRequest) (*adminv1.Profile, error) {
	p, err := s.Store.CreateProfile(ctx, req.GetDisplayName(), strings.TrimSpace(req.GetExternalRef()))
	if err != nil {
		return nil, storeError(fmt.Sprintf("a profile with external_ref %q", req.GetExternalRef()), err)
	}
	return profileProto(p), nil
}

// GetProfile implements GET /admin/v1/profiles/{id}.
func (s *Server) GetProfile(ctx context.Context, req *adminv1.GetProfileRequest) (*adminv1.Profile, error) {
	id, err := parseID("id", req.GetId())
	if err != nil {
		return nil, err
	}
	p, err := s.Store.GetProfile(ctx, id)
	if err != nil {
		return nil, storeError("profile", err)
	}
	return s.profileWithAvailable(ctx, p)
}

// LookupProfile implements GET /admin/v1/profiles:lookup.
func (s *Server) LookupProfile(ctx context.Context, req *adminv1.LookupProfileRequest) (*adminv1.Profile, error) {
	if req.GetExternalRef() == "" {
		return nil, apierror.New(apierror.InvalidRequest, "external_ref is required")
	}
	p, err := s.Store.LookupProfile(ctx, req.GetExternalRef())
	if err != nil {
		return nil, storeError("profile", err)
	}
	return s.profileWithAvailable(ctx, p)
}

// CreditProfile implements POST /admin/v1/profiles/{id}:credit.
func (s *Server) CreditProfile(ctx context.Context, req *adminv1.CreditProfileRequest) (*adminv1.Profile, error) {
	id, err := parseID("id", req.GetId())
	if err != nil {
		return nil, err
	}
	amount, err := parseAmount("amount", req.GetAmount())
	if err != nil {
		return nil, err
	}
	if amount.IsZero() {
		return nil, apierror.New(apierror.InvalidRequest, "amount: must not be zero")
	}
	if req.GetIdempotencyKey() == "" {
		// Without it a retried credit would pay twice.
		return nil, apierror.New(apierror.InvalidRequest, "idempotency_key is required")
	}
	res, err := s.Store.CreditProfile(ctx, id, amount, req.GetReason(), req.GetIdempotencyKey())
	switch {
	case errors.Is(err, store.ErrCreditMismatch):
		return nil, apierror.New(apierror.AlreadyExists, "idempotency_key %q was already used with a different amount", req.GetIdempotencyKey())
	case errors.Is(err, store.ErrNegativeBalance):
		return nil, apierror.New(apierror.FailedPrecondition, "the adjustment would make the balance negative")
	case errors.Is(err, store.ErrReserved):
		return nil, apierror.New(apierror.FailedPrecondition, "the adjustment would take the balance below what is reserved for requests in flight; retry in a few seconds")
	case err != nil:
		return nil, storeError("profile", err)
	}
	return s.profileWithAvailable(ctx, res.Profile)
}

// ApplyCatalog implements POST /admin/v1/catalog:apply.
func (s *Server) ApplyCatalog(ctx context.Context, req *adminv1.ApplyCatalogRequest) (*adminv1.ApplyCatalogResponse, error) {
	if req.GetDocument() == nil {
		return nil, apierror.New(apierror.InvalidRequest, "the catalog document is empty")
	}
	raw, err := protojson.Marshal(req.GetDocument())
	if err != nil {
		return nil, apierror.New(apierror.InvalidRequest, "catalog document: %v", err)
	}
	doc, err := catalog.Parse(raw)
	if err != nil {
		return nil, apierror.New(apierror.InvalidRequest, "catalog document: %v", err)
	}
	sum, err := s.Store.ApplyCatalog(ctx, doc)
	switch {
	case errors.Is(err, store.ErrCurrencyLocked), errors.Is(err, store.ErrUnknownReference):
		return nil, apierror.New(apierror.InvalidRequest, "catalog document: %v", err)
	case err != nil:
		return nil, err
	}
	if err := s.changed(ctx); err != nil {
		return nil, err
	}
	var providers []store.Provider
	for _, p := range doc.Providers {
		providers = append(providers, store.Provider{ID: p.ID, Kind: p.Kind, APIKeyEnv: p.APIKeyEnv, APIKeyPool: p.APIKeyPool, Active: true})
	}
	return &adminv1.ApplyCatalogResponse{
		Families: int32(sum.Families), Providers: int32(sum.Providers), Models: int32(sum.Models),
		DeactivatedModels: append([]string{}, sum.DeactivatedModels...), Currency: sum.Currency,
		Warnings: append([]string{}, UnsetCredentials(providers, s.Env)...), // credentials.go
	}, nil
}

// SetFxRates implements POST /admin/v1/fx:set.
func (s *Server) SetFxRates(ctx context.Context, req *adminv1.SetFxRatesRequest) (*adminv1.SetFxRatesResponse, error) {
	date, err := time.Parse(time.DateOnly, req.GetEffectiveDate())
	if err != nil {
		return nil, apierror.New(apierror.InvalidRequest, "effective_date: %q is not a YYYY-MM-DD date", req.GetEffectiveDate())
	}
	if req.GetFetchedAt() == nil {
		return nil, apierror.New(apierror.InvalidRequest, "fetched_at is required")
	}
	if len(req.GetRates()) == 0 {
		return nil, apierror.New(apierror.InvalidRequest, "rates: at least one rate is required")
	}
	fx := &store.FxSnapshot{EffectiveDate: date, FetchedAt: req.GetFetchedAt().AsTime(), Rates: map[string]decimal.Decimal{}}
	for cur, v := range req.GetRates() {
		if !slices.Contains(catalog.Currencies, cur) {
			return nil, apierror.New(apierror.InvalidRequest, "rates.%s: not one of %s", cur, strings.Join(catalog.Currencies, ", "))
		}
		r, err := parseAmount("rates."+cur, v)
		if err != nil {
			return nil, err
		}
		if !r.IsPositive() {
			return nil, apierror.New(apierror.InvalidRequest, "rates.%s: must be positive", cur)
		}
		fx.Rates[cur] = r
	}
	if err := s.Store.SetFxRates(ctx, fx); err != nil {
		return nil, err
	}
	if err := s.changed(ctx); err != nil {
		return nil, err
	}
	out := &adminv1.SetFxRatesResponse{EffectiveDate: req.GetEffectiveDate(), FetchedAt: req.GetFetchedAt(), Rates: map[string]string{}}
	for cur, r := range fx.Rates {
		out.Rates[cur] = r.String()
	}
	return out, nil
}
