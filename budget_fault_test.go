package main

import (
	"bytes"
	"context"
	"modelgateway/core/gatewaytest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
)

// A replica killed (kill -9) while its lease holds most of a key's budget (issue 32): another
// replica is refused with budget_exceeded while that lease stands, and is served once it has
// expired (the lease deadline, 5 s from its last renewal) and not before; nothing of the
// window is spent beyond the budget.
func TestBudgetOfAKilledReplicaReturnsAtTheLeaseDeadline(t *testing.T) {
	t.Parallel()
	f := newFaultEnv(t, faultOptions{})
	a := f.start("a")
	b := f.start("b")
	// 100 of balance, a budget of 0.1: a request holds 0.012, and a's lease on the budget
	// takes eight holds, 0.096, leaving less than a hold to b.
	key, pid := a.profile(t, "100")
	var keyID string
	if err := f.pool.QueryRow(context.Background(), `SELECT id::text FROM api_keys WHERE profile_id = $1::uuid`, pid).Scan(&keyID); err != nil {
		t.Fatal(err)
	}
	a.admin(t, "PATCH", "/admin/v1/keys/"+keyID, `{"budget":{"amount":"0.1","period":"TOTAL"}}`)
	gatewaytest.WaitFor(t, 30*time.Second, "the budget on b", func() bool {
		_, _, raw, _ := b.do("GET", "/v1/key", map[string]string{"Authorization": "Bearer " + key}, "")
		return bytes.Contains(raw, []byte(`"amount":"0.1"`))
	})
	// A stalled stream keeps a's hold, and so its budget lease, in use.
	go a.chat(chatReq{key: key, profile: pid, stream: true, prompt: "hi #sim:stall=60s"})
	var expires, now time.Time
	gatewaytest.WaitFor(t, 30*time.Second, "a's budget lease", func() bool {
		err := f.pool.QueryRow(context.Background(), `SELECT expires_at, clock_timestamp() FROM key_budget_leases WHERE key_id = $1::uuid AND amount > 0`, keyID).Scan(&expires, &now)
		if err != nil && err != pgx.ErrNoRows {
			t.Fatal(err)
		}
		return err == nil
	})
	if o := b.chat(chatReq{key: key, profile: pid}); o.status != 402 || o.code != "budget_exceeded" {
		t.Fatalf("b while a's budget lease stands: %v", o)
	}
	a.kill()
	if err := f.pool.QueryRow(context.Background(), `SELECT expires_at, clock_timestamp() FROM key_budget_leases WHERE key_id = $1::uuid AND amount > 0`, keyID).Scan(&expires, &now); err != nil {
		t.Fatalf("a's budget lease is gone at once after kill -9: %v", err)
	}
	if left := expires.Sub(now); left <= 0 || left > 5*time.Second {
		t.Fatalf("a's budget lease expires %v after the kill, want within 5 s", left)
	}
	for {
		o := b.chat(chatReq{key: key, profile: pid})
		var at time.Time
		if err := f.pool.QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&at); err != nil {
			t.Fatal(err)
		}
		if o.status == 200 && o.full {
			if at.Before(expires) {
				t.Fatalf("b was served at %v, before a's budget lease expired at %v", at, expires)
			}
			t.Logf("b served %v after a's budget lease expired", at.Sub(expires))
			break
		}
		if o.status != 402 || o.code != "budget_exceeded" {
			t.Fatalf("b: %v", o)
		}
		if at.After(expires.Add(15 * time.Second)) {
			t.Fatalf("b still refused 15 s after a's budget lease expired: %v", o)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// b goes on until the budget is spent: never beyond it.
	for range 20 {
		if o := b.chat(chatReq{key: key, profile: pid}); o.status != 200 {
			if o.code != "budget_exceeded" {
				t.Fatalf("b: %v", o)
			}
			break
		}
	}
	var spent decimal.Decimal
	if err := f.pool.QueryRow(context.Background(), `SELECT coalesce(sum(cost), 0) FROM requests WHERE key_id = $1::uuid`, keyID).Scan(&spent); err != nil {
		t.Fatal(err)
	}
	if spent.GreaterThan(decimal.RequireFromString("0.1")) || spent.LessThan(decimal.RequireFromString("0.084")) {
		t.Fatalf("the key's charges %s, want at most its budget of 0.1 and all but a hold of it", spent)
	}
	bal, _ := f.balance(t, pid)
	if !bal.Equal(decimal.NewFromInt(100).Sub(spent)) {
		t.Fatalf("balance %s, want 100 less the key's charges %s", bal, spent)
	}
}
