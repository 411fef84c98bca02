package realtime_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/shopspring/decimal"

	"modelgateway/core/gatewaytest"
)

// Realtime sessions ride on a key's budget like every other route (issue 32): each
// response's reserve is held against it, so a session ends with budget_exceeded when the next
// reserve no longer fits, after its response was charged in full; a new session is then
// refused at the upgrade with 402; and a key's expire_time ends its open session like a
// revocation does.
func TestRealtimeOnABudgetAndAnExpiry(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartMedia(t, gatewaytest.Options{})
	// rt-dear: a response's reserve is 409.6; a budget of 410 covers one, the balance many.
	_, pid := g.NewProfile("rt-budget", "100000")
	k := g.Admin("POST", "/admin/v1/profiles/"+pid+"/keys", `{"name":"rt","allowed_endpoints":["*"],"allowed_models":["*"],"budget":{"amount":"410","period":"MONTH"}}`)
	key, keyID := k["secret"].(string), k["key"].(map[string]any)["id"].(string)
	c, _, err := g.DialRealtime(t, "rt-dear", http.Header{"Authorization": {"Bearer " + key}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	gatewaytest.Until(t, c, "session.created")
	gatewaytest.Ask(t, c, "tell me a long story")
	done := gatewaytest.Until(t, c, "response.done")
	cost := gatewaytest.RealtimeCost(t, done, "0", "0", "100000", "0", "100000")
	_, _, err = c.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "budget_exceeded") {
		t.Fatalf("after a response the budget cannot pay again: %v", err)
	}
	balance := gatewaytest.Settled(t, g.Pool(), pid, 1)
	if want := decimal.NewFromInt(100000).Sub(cost); !balance.Equal(want) || cost.GreaterThan(decimal.NewFromInt(410)) {
		t.Fatalf("balance %s after a response of %s, want %s", balance, cost, want)
	}
	_, resp, err := g.DialRealtime(t, "rt-dear", http.Header{"Authorization": {"Bearer " + key}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusPaymentRequired {
		t.Fatalf("a new session on a spent budget: %v %v", err, resp)
	}
	raw, _ := io.ReadAll(resp.Body)
	if code, _, _ := gatewaytest.Envelope(t, raw); code != "budget_exceeded" {
		t.Fatalf("a new session on a spent budget: %s", raw)
	}
	var spent decimal.Decimal
	if err := g.Pool().QueryRow(context.Background(), `SELECT coalesce(sum(spent), 0) FROM key_spend WHERE key_id = $1`, uuid.MustParse(keyID)).Scan(&spent); err != nil || !spent.Equal(cost) {
		t.Fatalf("the key's spend %s, want the response's %s: %v", spent, cost, err)
	}

	// Expiry: the open session ends at the key's expire_time.
	expire := time.Now().Add(2 * time.Second)
	k2 := g.Admin("POST", "/admin/v1/profiles/"+pid+"/keys", `{"name":"rt-expiring","allowed_endpoints":["*"],"allowed_models":["*"],"expire_time":"`+expire.UTC().Format(time.RFC3339Nano)+`"}`)
	c2, _, err := g.DialRealtime(t, "rt", http.Header{"Authorization": {"Bearer " + k2["secret"].(string)}})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	gatewaytest.Until(t, c2, "session.created")
	gatewaytest.Ask(t, c2, "hello")
	gatewaytest.Until(t, c2, "response.done") // the session works before the expiry
	ce = gatewaytest.CloseOf(t, c2, 10*time.Second)
	if late := time.Since(expire); late < 0 || late > time.Second {
		t.Errorf("closed %v after the expiry, want within 1 s after it", late)
	}
	if ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "invalid_key") {
		t.Errorf("close %d %q, want 1008 invalid_key", ce.Code, ce.Text)
	}
	gatewaytest.Settled(t, g.Pool(), pid, 2)
}
