package billing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/store/storetest"
)

// answer is what a client saw of one chat request.
type answer struct {
	status int
	code   string // the envelope's code when status is not 200
	full   bool   // the whole answer arrived: the body of a 200, or a stream's terminal event
	err    error
}

func (o answer) String() string {
	return fmt.Sprintf("%d %s full=%v err=%v", o.status, o.code, o.full, o.err)
}

// chat sends m-money a request that costs exactly 0.012 when answered (gatewaytest.MoneyBody's,
// with the prompt and streaming of the caller's) and reads the whole answer.
func chat(g *gatewaytest.Gateway, key string, stream bool, prompt string) answer {
	body := fmt.Sprintf(`{"model":"m-money","max_tokens":12,"stream":%v,"messages":[{"role":"user","content":%q}]}`, stream, prompt)
	status, _, raw, err := g.Raw("POST", "/v1/chat/completions", gatewaytest.Bearer(key), body)
	o := answer{status: status, err: err}
	switch {
	case status == 200 && stream:
		o.full = bytes.Contains(raw, []byte("data: [DONE]"))
	case status == 200:
		var ans struct {
			Choices []json.RawMessage
			Usage   *json.RawMessage
		}
		o.full = err == nil && json.Unmarshal(raw, &ans) == nil && len(ans.Choices) > 0 && ans.Usage != nil
	case status != 0:
		var e struct{ Error struct{ Code string } }
		_ = json.Unmarshal(raw, &e)
		o.code = e.Error.Code
	}
	return o
}

// A replica killed (kill -9) while its lease holds most of a key's budget (issue 32): another
// replica is refused with budget_exceeded while that lease stands, and is served once it has
// expired (the lease deadline, 5 s from its last renewal) and not before; nothing of the
// window is spent beyond the budget.
func TestBudgetOfAKilledReplicaReturnsAtTheLeaseDeadline(t *testing.T) {
	t.Parallel()
	db := storetest.DatabaseURL(t)
	a := gatewaytest.StartGen(t, gatewaytest.Options{Name: "a", DatabaseURL: db})
	b := gatewaytest.Start(t, gatewaytest.Options{Name: "b", DatabaseURL: db})
	pool := a.Pool()
	// 100 of balance, a budget of 0.1: a request holds 0.012, and a's lease on the budget
	// takes eight holds, 0.096, leaving less than a hold to b.
	key, pid := a.NewProfile("", "100")
	var keyID string
	if err := pool.QueryRow(context.Background(), `SELECT id::text FROM api_keys WHERE profile_id = $1::uuid`, pid).Scan(&keyID); err != nil {
		t.Fatal(err)
	}
	a.Admin("PATCH", "/admin/v1/keys/"+keyID, `{"budget":{"amount":"0.1","period":"TOTAL"}}`)
	gatewaytest.WaitFor(t, 30*time.Second, "the budget on b", func() bool {
		_, _, raw, _ := b.Raw("GET", "/v1/key", map[string]string{"Authorization": "Bearer " + key}, "")
		return bytes.Contains(raw, []byte(`"amount":"0.1"`))
	})
	// GET /v1/key reads the key's row; b enforces the budget once its snapshot has it, which
	// the contract bounds at 1 s after the update's answer (a request admitted before that is
	// capped at settlement instead, and refused as insufficient_balance).
	time.Sleep(1500 * time.Millisecond)
	// A stalled stream keeps a's hold, and so its budget lease, in use.
	go chat(a.Gateway, key, true, "hi #sim:stall=60s")
	var expires, now time.Time
	gatewaytest.WaitFor(t, 30*time.Second, "a's budget lease", func() bool {
		err := pool.QueryRow(context.Background(), `SELECT expires_at, clock_timestamp() FROM key_budget_leases WHERE key_id = $1::uuid AND amount > 0`, keyID).Scan(&expires, &now)
		if err != nil && err != pgx.ErrNoRows {
			t.Fatal(err)
		}
		return err == nil
	})
	if o := chat(b, key, false, "hi"); o.status != 402 || o.code != "budget_exceeded" {
		t.Fatalf("b while a's budget lease stands: %v", o)
	}
	a.Kill()
	if err := pool.QueryRow(context.Background(), `SELECT expires_at, clock_timestamp() FROM key_budget_leases WHERE key_id = $1::uuid AND amount > 0`, keyID).Scan(&expires, &now); err != nil {
		t.Fatalf("a's budget lease is gone at once after kill -9: %v", err)
	}
	if left := expires.Sub(now); left <= 0 || left > 5*time.Second {
		t.Fatalf("a's budget lease expires %v after the kill, want within 5 s", left)
	}
	for {
		o := chat(b, key, false, "hi")
		var at time.Time
		if err := pool.QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&at); err != nil {
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
		if o := chat(b, key, false, "hi"); o.status != 200 {
			if o.code != "budget_exceeded" {
				t.Fatalf("b: %v", o)
			}
			break
		}
	}
	var spent decimal.Decimal
	if err := pool.QueryRow(context.Background(), `SELECT coalesce(sum(cost), 0) FROM requests WHERE key_id = $1::uuid`, keyID).Scan(&spent); err != nil {
		t.Fatal(err)
	}
	if spent.GreaterThan(decimal.RequireFromString("0.1")) || spent.LessThan(decimal.RequireFromString("0.084")) {
		t.Fatalf("the key's charges %s, want at most its budget of 0.1 and all but a hold of it", spent)
	}
	bal, _, _ := gatewaytest.LedgerOf(t, pool, pid)
	if !bal.Equal(decimal.NewFromInt(100).Sub(spent)) {
		t.Fatalf("balance %s, want 100 less the key's charges %s", bal, spent)
	}
}
