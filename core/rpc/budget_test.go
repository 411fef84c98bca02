package rpc

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "modelgateway/gen/gateway/admin/v1"
	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/billing"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
)

// budgetKey makes a funded profile and a key with a budget (and an expiry, when not zero).
func (e *coreEnv) budgetKey(t *testing.T, credit string, budget *adminv1.Budget, expire time.Time) (secret, keyID string, profile uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	p, err := e.admin.CreateProfile(ctx, &adminv1.CreateProfileRequest{DisplayName: "P"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.CreditProfile(ctx, &adminv1.CreditProfileRequest{Id: p.GetId(), Amount: credit, Reason: "topup", IdempotencyKey: uuid.NewString()}); err != nil {
		t.Fatal(err)
	}
	req := &adminv1.CreateKeyRequest{ProfileId: p.GetId(), Name: "budgeted", AllowedEndpoints: []string{"*"}, AllowedModels: []string{"*"}, Budget: budget}
	if !expire.IsZero() {
		req.ExpireTime = timestamppb.New(expire)
	}
	k, err := e.admin.CreateKey(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return k.GetSecret(), k.GetKey().GetId(), uuid.MustParse(p.GetId())
}

// A key's budget refuses, before generation, the request its hold no longer fits: 402
// budget_exceeded saying the budget, what is left and when it resets; a raised budget serves
// it again at once, and one removed (amount 0) no longer limits it. GET /v1/key shows the
// budget, the window's spend and the key's usage, and no secret.
func TestKeyBudgetRefusesAndShows(t *testing.T) {
	t.Parallel()
	e := newCoreEnv(t, 1)
	ctx := context.Background()
	key, keyID, p := e.budgetKey(t, "10", &adminv1.Budget{Amount: "1", Period: "day"}, time.Time{})
	flat := func() error { _, err := generate(as(key, ""), e, chat("m-flat", 0, ptr[int64](5), false)); return err }
	for i := range 4 { // 0.25 a request: four fit in the budget of 1
		if err := flat(); err != nil {
			t.Fatalf("request %d within the budget: %v", i, err)
		}
	}
	err := flat()
	ae := apistatus.FromError(err)
	_, end := billing.Window(store.BudgetDay, time.Now())
	want := "the key's budget of 1 RUB per day has 0 RUB left, less than this request may cost (up to 0.25 RUB); it resets at " + end.Format(time.RFC3339)
	if ae.Code != apierror.BudgetExceeded || apierror.HTTPStatus(ae.Code) != http.StatusPaymentRequired || ae.Message != want {
		t.Fatalf("the fifth request: %v (status %d), want 402 budget_exceeded %q", err, apierror.HTTPStatus(ae.Code), want)
	}
	if b := e.balance(t, p, 4); !b.Equal(decimal.NewFromInt(9)) {
		t.Fatalf("balance %s, want 10 less four charges of 0.25", b)
	}

	// The key's own view; the refused request's record (no charge) is written in the
	// background (Run is not running here: flushed by hand).
	if err := e.ledger.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	view, err := e.core.GetCallerKey(as(key, ""), &corev1.GetCallerKeyRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if view.GetName() != "budgeted" || !strings.HasPrefix(key, view.GetPrefix()) || len(view.GetPrefix()) >= len(key) ||
		view.GetBudget().GetAmount() != "1" || view.GetBudget().GetPeriod() != "DAY" || view.GetBudgetSpent() != "1" ||
		!view.GetBudgetResetsAt().AsTime().Equal(end) || view.GetExpireTime() != nil || view.GetCurrency() != "RUB" ||
		view.GetUsage().GetToday().GetRequests() != 5 || view.GetUsage().GetToday().GetCost() != "1" ||
		view.GetUsage().GetMonth().GetRequests() != 5 || view.GetUsage().GetMonth().GetCost() != "1" {
		t.Fatalf("GET /v1/key: %v", view)
	}
	if js, _ := protojson.Marshal(view); strings.Contains(string(js), key) || strings.Contains(string(js), keyID) {
		t.Fatalf("GET /v1/key shows the secret or the key's id: %s", js)
	}
	// The token limit shows as it is stored (a limit far above what this test uses).
	if _, err := e.admin.UpdateKey(ctx, &adminv1.UpdateKeyRequest{Key: &adminv1.Key{Id: keyID, MaxTokensPerMinute: 1000000}}); err != nil {
		t.Fatal(err)
	}
	if v, err := e.core.GetCallerKey(as(key, ""), &corev1.GetCallerKeyRequest{}); err != nil || v.GetMaxTokensPerMinute() != 1000000 {
		t.Fatalf("GET /v1/key's max_tokens_per_minute: %v %v", v, err)
	}
	// Admin's Key shows the same spend.
	ks, err := e.admin.ListKeys(ctx, &adminv1.ListKeysRequest{ProfileId: p.String()})
	if err != nil || len(ks.GetKeys()) != 1 || ks.GetKeys()[0].GetBudgetSpent() != "1" || !ks.GetKeys()[0].GetBudgetResetsAt().AsTime().Equal(end) {
		t.Fatalf("ListKeys: %v %v", ks, err)
	}
	if one, err := e.admin.GetKey(ctx, &adminv1.GetKeyRequest{Id: keyID}); err != nil || one.GetBudgetSpent() != "1" || one.GetBudget().GetAmount() != "1" {
		t.Fatalf("GetKey: %v %v", one, err)
	}

	// Raised: served again at once, up to the new amount.
	upd, err := e.admin.UpdateKey(ctx, &adminv1.UpdateKeyRequest{Key: &adminv1.Key{Id: keyID, Budget: &adminv1.Budget{Amount: "1.25", Period: "DAY"}}})
	if err != nil || upd.GetBudget().GetAmount() != "1.25" || upd.GetBudgetSpent() != "1" {
		t.Fatalf("raise: %v %v", upd, err)
	}
	if err := flat(); err != nil {
		t.Fatalf("after the raise: %v", err)
	}
	if err := flat(); code(err) != apierror.BudgetExceeded {
		t.Fatalf("beyond the raised budget: %v", err)
	}
	// Removed: no limit.
	if _, err := e.admin.UpdateKey(ctx, &adminv1.UpdateKeyRequest{Key: &adminv1.Key{Id: keyID, Budget: &adminv1.Budget{Amount: "0"}},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"budget"}}}); err != nil {
		t.Fatal(err)
	}
	if err := flat(); err != nil {
		t.Fatalf("without a budget: %v", err)
	}
	if b := e.balance(t, p, 6); !b.Equal(decimal.RequireFromString("8.5")) {
		t.Fatalf("balance %s, want 8.5", b)
	}
	// Bad budgets are refused.
	for _, b := range []*adminv1.Budget{{Amount: "-1", Period: "DAY"}, {Amount: "x", Period: "DAY"}, {Amount: "1", Period: "YEAR"}, {Amount: "0.0000000001", Period: "DAY"}} {
		var ae *apierror.Error
		if _, err := e.admin.UpdateKey(ctx, &adminv1.UpdateKeyRequest{Key: &adminv1.Key{Id: keyID, Budget: b}}); !errors.As(err, &ae) || ae.Code != apierror.InvalidRequest {
			t.Errorf("budget %v: %v", b, err)
		}
	}
}

// Count requests are free, but a spent budget refuses them like a zero balance does.
func TestKeyBudgetRefusesCounts(t *testing.T) {
	t.Parallel()
	e := newCoreEnv(t, 1)
	key, _, _ := e.budgetKey(t, "10", &adminv1.Budget{Amount: "0.25", Period: "MONTH"}, time.Time{})
	count := &corev1.CountTokensRequest{Request: &corev1.GenerateRequest{EndpointFamily: "content.count_tokens", Model: "m-a", Protocol: corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS,
		Messages: []*corev1.Message{{Role: corev1.Role_ROLE_USER, Parts: []*corev1.Part{{Kind: &corev1.Part_Text{Text: "hi"}}}}}}}
	if _, err := e.core.CountTokens(as(key, ""), count); err != nil {
		t.Fatalf("a count within the budget: %v", err)
	}
	if _, err := generate(as(key, ""), e, chat("m-flat", 0, ptr[int64](5), false)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.core.CountTokens(as(key, ""), count); code(err) != apierror.BudgetExceeded {
		t.Fatalf("a count on a spent budget: %v", err)
	}
}

// From its expire_time the key is invalid_key; a request in flight then finishes and is
// charged.
func TestKeyExpiryLetsRequestsInFlightFinish(t *testing.T) {
	t.Parallel()
	e := newCoreEnv(t, 1)
	expire := time.Now().Add(1500 * time.Millisecond)
	key, keyID, p := e.budgetKey(t, "10", nil, expire)
	stream, err := e.core.Generate(as(key, ""), chat("m-flat", 0, ptr[int64](5), true))
	if err != nil {
		t.Fatal(err)
	}
	// The in-flight request outlives the key: the simulator stalls it past the expiry.
	stalled := chat("m-flat", 0, ptr[int64](5), true)
	stalled.RawBody = []byte(`{"model":"m-flat","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"hi #sim:stall=3s"}]}`)
	slow, err := e.core.Generate(as(key, ""), stalled)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := slow.Recv(); err != nil {
		t.Fatalf("the slow request's first event: %v", err)
	}
	for {
		if _, err := stream.Recv(); err != nil {
			break
		}
	}
	time.Sleep(time.Until(expire))
	if _, err := generate(as(key, ""), e, chat("m-flat", 0, ptr[int64](5), false)); code(err) != apierror.InvalidKey {
		t.Fatalf("a request after the expiry: %v, want invalid_key", err)
	}
	if _, err := e.core.GetCallerKey(as(key, ""), &corev1.GetCallerKeyRequest{}); code(err) != apierror.InvalidKey {
		t.Fatalf("GET /v1/key after the expiry: %v, want invalid_key", err)
	}
	var last *corev1.GenerateEvent
	for {
		ev, err := slow.Recv()
		if err != nil {
			break
		}
		last = ev
	}
	if last.GetUsage().GetCost() != "0.25" {
		t.Fatalf("the request in flight ended with %v, want its charge of 0.25", last)
	}
	if b := e.balance(t, p, 2); !b.Equal(decimal.RequireFromString("9.5")) {
		t.Fatalf("balance %s, want two charges of 0.25", b)
	}
	// Moved later through UpdateKey, the key serves again.
	if _, err := e.admin.UpdateKey(context.Background(), &adminv1.UpdateKeyRequest{Key: &adminv1.Key{Id: keyID, ExpireTime: timestamppb.New(time.Now().Add(time.Hour))}}); err != nil {
		t.Fatal(err)
	}
	if _, err := generate(as(key, ""), e, chat("m-flat", 0, ptr[int64](5), false)); err != nil {
		t.Fatalf("after the expiry moved later: %v", err)
	}
}
