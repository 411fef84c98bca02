package billing_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/store/storetest"
)

// A key's budget over two gateways on one database (issue 32): concurrent bursts on both never
// charge more than the budget, the refusals are 402 budget_exceeded in the spec's envelope
// with the request id, a budget raised on one replica is in force on the other within 1 s, and
// GET /v1/key answers the key itself on every key mechanism of /v1, with no secret.
func TestKeyBudgetOnTwoGateways(t *testing.T) {
	t.Parallel()
	db := storetest.DatabaseURL(t)
	a := gatewaytest.StartGen(t, gatewaytest.Options{Name: "a", DatabaseURL: db})
	b := &gatewaytest.Gen{Gateway: gatewaytest.Start(t, gatewaytest.Options{Name: "b", DatabaseURL: db}), Up: a.Up}
	_, pid := a.NewProfile("budget", "100")
	k := a.Admin("POST", "/admin/v1/profiles/"+pid+"/keys",
		`{"name":"capped","allowed_endpoints":["*"],"allowed_models":["*"],"budget":{"amount":"0.1","period":"DAY"}}`)
	key, keyID := k["secret"].(string), k["key"].(map[string]any)["id"].(string)
	if got := k["key"].(map[string]any)["budget"]; fmt.Sprint(got) != "map[amount:0.1 period:DAY]" || k["key"].(map[string]any)["budget_spent"] != "0" {
		t.Fatalf("created key %v", k["key"])
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if s, _, _ := b.Do("GET", "/v1/key", gatewaytest.Bearer(key), ""); s == 200 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the key did not reach replica B: %d", s)
		}
	}

	// m-money: 0.001 an output token, nothing for input; 10 tokens at most: holds of 0.01.
	chat := `{"model":"m-money","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	var mu sync.Mutex
	served, refused := 0, 0
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := []*gatewaytest.Gen{a, b}[i%2]
			id := fmt.Sprintf("budget-%d-%s", i, uuid.NewString()[:8])
			status, _, raw := g.PostAs(key, "/v1/chat/completions", map[string]string{"x-request-id": id}, chat)
			mu.Lock()
			defer mu.Unlock()
			switch status {
			case 200:
				served++
			case 402:
				refused++
				if code, msg, rid := gatewaytest.Envelope(t, raw); code != "budget_exceeded" || rid != id ||
					!strings.Contains(msg, "budget of 0.1 RUB per day has ") || !strings.Contains(msg, "it resets at "+time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)+"T00:00:00Z") {
					t.Errorf("refusal %s", raw)
				}
			default:
				t.Errorf("request %d: %d %s", i, status, raw)
			}
		}()
	}
	wg.Wait()
	bal := gatewaytest.CheckMoney(t, a.Pool(), pid)
	charged := decimal.NewFromInt(100).Sub(bal)
	var spent decimal.Decimal
	if err := a.Pool().QueryRow(context.Background(), `SELECT coalesce(sum(cost), 0) FROM requests WHERE key_id = $1`, uuid.MustParse(keyID)).Scan(&spent); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d served, %d refused, %s charged of a budget of 0.1", served, refused, charged)
	if charged.GreaterThan(decimal.RequireFromString("0.1")) || !spent.Equal(charged) || refused == 0 || served == 0 {
		t.Fatalf("%d served, %d refused: charged %s (the key's records %s) on a budget of 0.1", served, refused, charged, spent)
	}

	if one := b.Admin("GET", "/admin/v1/keys/"+keyID, ""); one["budget_spent"] != charged.String() || one["budget_resets_at"] == nil {
		t.Fatalf("GetKey on replica B: %v, want budget_spent %s", one, charged)
	}

	// Raised on A, in force on B within a second.
	upd := a.Admin("PATCH", "/admin/v1/keys/"+keyID, `{"budget":{"amount":"1","period":"DAY"}}`)
	if upd["budget_spent"] != charged.String() {
		t.Errorf("updated key %v, want budget_spent %s", upd, charged)
	}
	raised := time.Now()
	for {
		if status, _, _ := b.PostAs(key, "/v1/chat/completions", nil, chat); status == 200 {
			break
		}
		if time.Since(raised) > time.Second {
			t.Fatalf("the raised budget was not in force on replica B within 1 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the raised budget served on replica B after %s", time.Since(raised))

	// GET /v1/key on each key mechanism of /v1, on both replicas.
	for i, h := range []map[string]string{gatewaytest.Bearer(key), {"x-api-key": key}, {"api-key": key}} {
		g := []*gatewaytest.Gen{a, b}[i%2]
		status, _, view := g.Do("GET", "/v1/key", h, "")
		if status != 200 {
			t.Fatalf("GET /v1/key with %v: %d %v", h, status, view)
		}
		usage, _ := view["usage"].(map[string]any)
		today, _ := usage["today"].(map[string]any)
		if view["name"] != "capped" || !strings.HasPrefix(key, view["prefix"].(string)) || fmt.Sprint(view["budget"]) != "map[amount:1 period:DAY]" ||
			view["currency"] != "RUB" || view["expire_time"] != nil || today["requests"] == nil || view["budget_resets_at"] == nil {
			t.Fatalf("GET /v1/key: %v", view)
		}
		for k, v := range view {
			if strings.Contains(fmt.Sprint(v), key) || k == "secret" || k == "id" {
				t.Fatalf("GET /v1/key shows %s = %v", k, v)
			}
		}
	}
	if status, _, body := a.Do("GET", "/v1/key", nil, ""); status != 401 || gatewaytest.Code(body) != "invalid_key" {
		t.Fatalf("GET /v1/key without a key: %d %v", status, body)
	}
}
