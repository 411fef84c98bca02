package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/store/storetest"
)

const moneyBody = gatewaytest.MoneyBody

var moneyCost = gatewaytest.MoneyCost

// ledgerOf reads a profile's balance and the sum of its entries.
func (g *genEnv) ledgerOf(t testing.TB, pid string) (balance, sum decimal.Decimal, charges int) {
	t.Helper()
	return gatewaytest.LedgerOf(t, g.g.Store.Pool, pid)
}

// settled waits until the profile has n charges.
func (g *genEnv) settled(t testing.TB, pid string, n int) (balance decimal.Decimal) {
	t.Helper()
	return gatewaytest.Settled(t, g.g.Store.Pool, pid, n)
}

func (g *genEnv) postAs(t testing.TB, key, path string, headers map[string]string, body string) (int, http.Header, []byte) {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + key}
	for k, v := range headers {
		h[k] = v
	}
	return g.post(t, path, h, body)
}

// A delivered answer is charged once, its cost is in the headers and in ListUsage, and the
// balance shows it within 2 s (spec 8, contract).
func TestChargeOnceWithCostHeaders(t *testing.T) {
	g := startGen(t)
	key, pid := g.newProfile(t, "money-1", "1")
	status, hdr, raw := g.postAs(t, key, "/v1/chat/completions", map[string]string{"X-Request-Id": "pay-1"}, moneyBody)
	if status != 200 || hdr.Get("X-Request-Cost") != "0.012" || hdr.Get("X-Request-Currency") != "RUB" {
		t.Fatalf("%d cost %q %q: %s", status, hdr.Get("X-Request-Cost"), hdr.Get("X-Request-Currency"), raw)
	}
	if b := g.settled(t, pid, 1); !b.Equal(decimal.RequireFromString("0.988")) {
		t.Fatalf("balance %s, want 0.988", b)
	}
	usage := g.admin("GET", "/admin/v1/profiles/"+pid+"/usage", "")
	recs := usage["records"].([]any)
	r := recs[0].(map[string]any)
	if len(recs) != 1 || r["request_id"] != "pay-1" || r["cost"] != "0.012" || r["status"] != "ok" || r["usage_reliable"] != true || r["output_tokens"] != "12" {
		t.Fatalf("usage records %v", recs)
	}
	// Streams are charged too, without headers (the status line went before the cost was known).
	status, _, raw = g.postAs(t, key, "/v1/chat/completions", nil, strings.Replace(moneyBody, `"max_tokens"`, `"stream":true,"max_tokens"`, 1))
	if status != 200 || !strings.Contains(string(raw), "[DONE]") {
		t.Fatalf("%d %s", status, raw)
	}
	g.settled(t, pid, 2)
}

// Reusing a request id is refused before anything goes upstream, also for an id whose first
// request failed; counting tokens and failed answers cost nothing.
func TestNothingChargedWithoutADeliveredAnswer(t *testing.T) {
	g := startGen(t)
	key, pid := g.newProfile(t, "money-2", "1")
	status, _, raw := g.postAs(t, key, "/v1/chat/completions", map[string]string{"X-Request-Id": "cut-1"},
		`{"model":"m-money","stream":true,"max_tokens":12,"messages":[{"role":"user","content":"x #sim:cut"}]}`)
	if status != 200 || strings.Contains(string(raw), "[DONE]") {
		t.Fatalf("%d %s", status, raw)
	}
	status, _, raw = g.postAs(t, key, "/v1/chat/completions", map[string]string{"X-Request-Id": "fail-1"},
		`{"model":"m-money","max_tokens":12,"messages":[{"role":"user","content":"x #sim:fail=500"}]}`)
	if status != 502 {
		t.Fatalf("%d %s", status, raw)
	}
	calls := len(g.up.Calls())
	for _, id := range []string{"cut-1", "fail-1"} {
		status, _, raw = g.postAs(t, key, "/v1/chat/completions", map[string]string{"X-Request-Id": id}, moneyBody)
		if code, _, rid := envelope(t, raw); status != 409 || code != "duplicate_request_id" || rid != id {
			t.Fatalf("reused id %s: %d %s", id, status, raw)
		}
	}
	if len(g.up.Calls()) != calls {
		t.Fatal("a duplicate request reached the upstream")
	}
	status, _, _ = g.postAs(t, key, "/v1/messages/count_tokens", map[string]string{"anthropic-version": "2023-06-01"},
		`{"model":"m-anthropic","messages":[{"role":"user","content":"hello"}]}`)
	if status != 200 || len(g.up.Calls()) != calls+1 {
		t.Fatalf("count tokens: %d", status)
	}
	// A delivered answer after them: once its charge has settled, a wrong charge of the
	// earlier ones would have settled too, so exactly one charge of 0.012 proves they cost nothing.
	if status, _, raw := g.postAs(t, key, "/v1/chat/completions", map[string]string{"X-Request-Id": "paid-1"}, moneyBody); status != 200 {
		t.Fatalf("paid request: %d %s", status, raw)
	}
	if b := g.settled(t, pid, 1); !b.Equal(decimal.RequireFromString("0.988")) {
		t.Fatalf("balance %s after answers that were not delivered and one that was", b)
	}
	// Records without a charge are settled in the background (a charge is written before its
	// answer ends); wait for the two to leave in_progress.
	var byID map[string]map[string]any
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		usage := g.admin("GET", "/admin/v1/profiles/"+pid+"/usage", "")
		byID = map[string]map[string]any{}
		for _, rec := range usage["records"].([]any) {
			r := rec.(map[string]any)
			byID[r["request_id"].(string)] = r
		}
		if byID["cut-1"]["status"] != "in_progress" && byID["fail-1"]["status"] != "in_progress" || time.Now().After(deadline) {
			break
		}
	}
	for _, id := range []string{"cut-1", "fail-1"} {
		if r := byID[id]; r == nil || r["cost"] != "" || r["status"] != "upstream_error" {
			t.Errorf("record of %s: %v", id, r)
		}
	}
	if r := byID["paid-1"]; r == nil || r["cost"] != "0.012" {
		t.Errorf("record of the paid request: %v", r)
	}
}

// Refusals before anything goes upstream: no price, not enough balance.
func TestPriceAndBalanceChecks(t *testing.T) {
	g := startGen(t)
	key, _ := g.newProfile(t, "money-3", "0")
	status, _, raw := g.postAs(t, key, "/v1/chat/completions", nil, moneyBody)
	if code, _, _ := envelope(t, raw); status != 402 || code != "insufficient_balance" {
		t.Fatalf("%d %s", status, raw)
	}
	status, _, raw = g.post(t, "/v1/responses", nil, `{"model":"m-money","input":"hi"}`)
	if code, _, _ := envelope(t, raw); status != 403 || code != "pricing_unavailable" {
		t.Fatalf("%d %s", status, raw)
	}
}

// Two gateway replicas on one database serve 200 concurrent requests of one profile whose
// balance covers 50: never more is spent than the balance, every delivered answer is charged
// exactly once, and balance = sum(entries).
func TestTwoReplicasSpendNoMoreThanTheBalance(t *testing.T) {
	db := storetest.DatabaseURL(t)
	a := startGenOn(t, db, true)
	key, pid := a.newProfile(t, "money-4", moneyCost.Mul(decimal.NewFromInt(50)).String())
	b := startGenOn(t, db, false)
	replicas := []*genEnv{a, b}
	var mu sync.Mutex
	var ok, refused int
	var costs decimal.Decimal
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, hdr, raw := replicas[i%2].postAs(t, key, "/v1/chat/completions", nil, moneyBody)
			mu.Lock()
			defer mu.Unlock()
			switch status {
			case 200:
				ok++
				costs = costs.Add(decimal.RequireFromString(hdr.Get("X-Request-Cost")))
			case 402:
				refused++
			default:
				t.Errorf("status %d: %s", status, raw)
			}
		}()
	}
	wg.Wait()
	if ok > 50 || ok == 0 || refused == 0 {
		t.Fatalf("%d answered, %d refused", ok, refused)
	}
	balance := a.settled(t, pid, ok)
	if balance.IsNegative() || !balance.Equal(moneyCost.Mul(decimal.NewFromInt(int64(50-ok)))) || !costs.Equal(moneyCost.Mul(decimal.NewFromInt(int64(ok)))) {
		t.Fatalf("%d answered: balance %s, costs in headers %s", ok, balance, costs)
	}
	t.Logf("%d answered, %d refused, balance %s", ok, refused, balance)
}

// Two requests with one id racing on two replicas: exactly one proceeds.
func TestDuplicateRequestIDRaceOnTwoReplicas(t *testing.T) {
	db := storetest.DatabaseURL(t)
	a := startGenOn(t, db, true)
	key, _ := a.newProfile(t, "money-5", "10")
	b := startGenOn(t, db, false)
	for round := range 10 {
		id := fmt.Sprintf("race-%d", round)
		var wg sync.WaitGroup
		statuses := make([]int, 2)
		for i, g := range []*genEnv{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i], _, _ = g.postAs(t, key, "/v1/chat/completions", map[string]string{"X-Request-Id": id}, moneyBody)
			}()
		}
		wg.Wait()
		if !(statuses[0] == 200 && statuses[1] == 409 || statuses[0] == 409 && statuses[1] == 200) {
			t.Fatalf("round %d: statuses %v", round, statuses)
		}
	}
	var n int
	if err := a.g.Store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM requests WHERE request_id LIKE 'race-%'`).Scan(&n); err != nil || n != 10 {
		t.Fatalf("%d request records, %v", n, err)
	}
}

// A replica that shuts down right after answering has written the charge before Shutdown
// returns: a delivered response is never lost (flush on SIGTERM).
func TestShutdownSettlesDeliveredAnswers(t *testing.T) {
	db := storetest.DatabaseURL(t)
	a := startGenOn(t, db, true)
	key, pid := a.newProfile(t, "money-6", "1")
	cfg := &Config{DatabaseURL: db, HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0", DrainTimeout: 5 * time.Second,
		Env: func(string) string { return upstreamKey }}
	g, err := Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	b := &genEnv{env: &env{t: t, g: g, base: "http://" + g.HTTPAddr}}
	for i := range 3 {
		if status, _, raw := b.postAs(t, key, "/v1/chat/completions", nil, moneyBody); status != 200 {
			t.Fatalf("request %d: %d %s", i, status, raw)
		}
	}
	// A fourth answer is still streaming when the shutdown starts: the drain lets it finish
	// and the final flush charges it, though no settlement tick follows.
	inflight := moneyBody[:len(moneyBody)-len(`"hi"}]}`)] + `"hi #sim:stall=1s"}]}`
	resp, err := http.DefaultClient.Do(mustRequest(t, b.base+"/v1/chat/completions", key, strings.Replace(inflight, `"max_tokens"`, `"stream":true,"max_tokens"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	if _, err := rd.ReadString('\n'); err != nil || resp.StatusCode != 200 {
		t.Fatalf("in-flight stream: %d %v", resp.StatusCode, err)
	}
	shut := make(chan error, 1)
	go func() { shut <- g.Shutdown(5 * time.Second) }()
	if rest, err := io.ReadAll(rd); err != nil || !strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("the in-flight stream was cut by the shutdown: %v %q", err, rest)
	}
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	bal, sum, charges := a.ledgerOf(t, pid)
	if charges != 4 || !bal.Equal(sum) || !bal.Equal(decimal.RequireFromString("0.952")) {
		t.Fatalf("after shutdown: %d charges, balance %s, entries %s", charges, bal, sum)
	}
}

// mustRequest is a JSON POST with a key.
func mustRequest(t testing.TB, url, key, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	return req
}
