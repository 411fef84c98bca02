package realtime_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/shopspring/decimal"

	"modelgateway/core/gatewaytest"
)

// Issue 13 item 3: a realtime session's reserve grows with the conversation, so that the next
// response's likely input (the last reported usage, plus room) is covered, or the session is
// closed before it can overspend. rt: input 100, audio input 800, output 400, audio output
// 1600 per 1M. The first reserve is 32768 tokens at 800 plus 4096 at 1600 = 32.77, which a
// credit of 100 covers; the first response reports 200000 input tokens (about 20), after
// which the reserve for the next is about 193, more than the 80 left: the session closes
// with insufficient_balance after the first response, which is charged in full. A fixed
// reserve would have kept the session open for a response the balance could not pay.
func TestRealtimeReserveGrowsWithTheConversation(t *testing.T) {
	g := gatewaytest.StartMedia(t, gatewaytest.Options{})
	key, pid := g.NewProfile("growing", "100")
	c, _, err := g.DialRealtime(t, "rt", http.Header{"Authorization": {"Bearer " + key}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	gatewaytest.Until(t, c, "session.created")
	gatewaytest.Ask(t, c, "summarise the attached book #sim:input=200000")
	done := gatewaytest.Until(t, c, "response.done")
	cost := gatewaytest.RealtimeCost(t, done, "100", "10", "400", "800", "1600")
	if cost.LessThan(decimal.NewFromInt(20)) || cost.GreaterThan(decimal.NewFromInt(40)) {
		t.Fatalf("first response cost %s: the usage directive did not take", cost)
	}
	_, _, err = c.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "insufficient_balance") {
		t.Fatalf("after a response whose input the balance could not cover again: %v", err)
	}
	balance := gatewaytest.Settled(t, g.Pool(), pid, 1)
	if want := decimal.NewFromInt(100).Sub(cost); !balance.Equal(want) {
		t.Errorf("balance %s, want %s (the response charged in full, nothing more)", balance, want)
	}
	if balance.IsNegative() {
		t.Errorf("balance below zero: %s", balance)
	}
}
