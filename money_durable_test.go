package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/store/storetest"
	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
)

// checkMoney is the ledger invariant for one profile (gatewaytest.CheckMoney).
func (g *genEnv) checkMoney(t *testing.T, pid string) decimal.Decimal {
	t.Helper()
	return gatewaytest.CheckMoney(t, g.g.Store.Pool, pid)
}

// overUsage is an OpenAI-style upstream that reports 1000 prompt tokens for any prompt, far
// above what a hold estimates from a short body (image inputs, provider-side prompts).
func overUsage() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":1,"total_tokens":1001}}`)
	}))
}

// A long sequence of requests whose usage is far above their holds is served while the
// balance lasts, charged in full each time; only then is a request refused (issue 13: the
// third request of a funded profile was refused).
func TestUsageAboveTheEstimateKeepsBeingServed(t *testing.T) {
	t.Parallel()
	up := overUsage()
	t.Cleanup(up.Close)
	g := startGenOn(t, storetest.DatabaseURL(t), false)
	g.admin("POST", "/admin/v1/catalog:apply", `{"currency":"RUB","families":[{"id":"fam"}],
		"providers":[{"id":"over","kind":"openai","base_url":"`+up.URL+`/v1","api_key_env":"UP_KEY"}],
		"models":[{"id":"m-over","family":"fam","routes":[{"endpoint_families":["chat.completions"],"provider":"over","upstream_model":"up"}],
		  "prices":[{"endpoint_families":["chat.completions"],"billing_mode":"per_token","input":"100","output":"0"}]}]}`)
	key, pid := g.newProfile(t, "over-1", "1")
	// Hold: about 114 input tokens (0.0114); charge: 1000 tokens (0.1).
	body := `{"model":"m-over","max_tokens":1,"messages":[{"role":"user","content":"two words"}]}`
	served := 0
	for i := range 20 {
		status, hdr, raw := g.postAs(t, key, "/v1/chat/completions", map[string]string{"X-Request-Id": fmt.Sprint("over-", i)}, body)
		if status == http.StatusOK {
			if hdr.Get("X-Request-Cost") != "0.1" {
				t.Fatalf("request %d cost %q", i, hdr.Get("X-Request-Cost"))
			}
			served++
			continue
		}
		code, _, _ := envelope(t, raw)
		if status != http.StatusPaymentRequired || code != apierror.InsufficientBalance {
			t.Fatalf("request %d: %d %s", i, status, raw)
		}
		break
	}
	if served != 10 {
		t.Fatalf("%d requests of 0.1 served on a balance of 1", served)
	}
	// Durable before delivered: the charges are in the balance already.
	if b := g.checkMoney(t, pid); !b.IsZero() {
		t.Fatalf("balance %s, want 0", b)
	}
}

// The gRPC listener treats its callers as clients: internal metadata is ignored (a
// "generated" id is still checked for reuse), and ids of a form no client may send (the
// gateway's derived ids contain spaces) are refused.
func TestGRPCListenerIgnoresInternalMetadata(t *testing.T) {
	t.Parallel()
	g := startGen(t)
	conn, err := grpc.NewClient(g.g.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	core := corev1.NewCoreServiceClient(conn)
	generate := func(id string) error {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+g.key,
			"x-request-id", id, "x-request-id-generated", "1")
		max := int64(12)
		stream, err := core.Generate(ctx, &corev1.GenerateRequest{EndpointFamily: "chat.completions", Protocol: corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS,
			Model: "m-money", RawBody: []byte(moneyBody), MaxOutputTokens: &max})
		if err != nil {
			return err
		}
		for {
			if _, err := stream.Recv(); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
		}
	}
	if err := generate("grpc-1"); err != nil {
		t.Fatalf("first request: %v", err)
	}
	if err := generate("grpc-1"); apistatus.FromError(err).Code != apierror.DuplicateRequestID {
		t.Fatalf("reused id with x-request-id-generated: %v", err)
	}
	if err := generate("sess 1 resp_1"); apistatus.FromError(err).Code != apierror.InvalidRequest {
		t.Fatalf("an id of the derived form: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	g.checkMoney(t, g.profileID)
}

// Profile.available and /v1/balance available are the balance less the leases replicas hold
// for requests in flight; an unused lease returns to the pool within seconds.
func TestAvailableShowsLeases(t *testing.T) {
	t.Parallel()
	g := startGen(t)
	key, pid := g.newProfile(t, "avail-1", "1")
	if status, _, raw := g.postAs(t, key, "/v1/chat/completions", nil, moneyBody); status != 200 {
		t.Fatalf("%d %s", status, raw)
	}
	p := g.admin("GET", "/admin/v1/profiles/"+pid, "")
	if p["balance"] != "0.988" || p["available"] == p["balance"] {
		t.Fatalf("right after a request: %v", p)
	}
	deadline := time.Now().Add(8 * time.Second)
	for {
		p = g.admin("GET", "/admin/v1/profiles/"+pid, "")
		if p["available"] == "0.988" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease did not return: %v", p)
		}
		time.Sleep(100 * time.Millisecond)
	}
	status, _, raw := g.do("GET", "/v1/balance", map[string]string{"Authorization": "Bearer " + key}, "")
	if status != 200 || raw["available"] != "0.988" {
		t.Fatalf("balance: %d %v", status, raw)
	}
	g.checkMoney(t, pid)
}

// Each realtime response is charged, durably, before its response.done reaches the client,
// under a record id the gateway makes: the session id, the response's number and the
// upstream's response id, with spaces no client id can contain.
func TestRealtimeChargesAreDurableWithDerivedIDs(t *testing.T) {
	g := startMedia(t)
	c, _, err := g.dialRealtime(t, "rt", http.Header{"Authorization": {"Bearer " + g.key}, "X-Request-Id": {"rt-sess-1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	until(t, c, "session.created")
	var ids []string
	for i := range 2 {
		ask(t, c, "hello there")
		done := until(t, c, "response.done")
		ids = append(ids, fmt.Sprintf("rt-sess-1 %d %s", i+1, done["response"].(map[string]any)["id"]))
		// No waiting: the charge is in the ledger when the client sees response.done.
		if _, _, charges := g.ledgerOf(t, g.profileID); charges != i+1 {
			t.Fatalf("after response %d: %d charges", i+1, charges)
		}
	}
	for _, id := range ids {
		var status string
		var cost decimal.NullDecimal
		if err := g.g.Store.Pool.QueryRow(context.Background(), `SELECT status, cost FROM requests WHERE profile_id = $1 AND request_id = $2`,
			uuid.MustParse(g.profileID), id).Scan(&status, &cost); err != nil || status != "ok" || !cost.Valid {
			t.Fatalf("record %q: %s %v %v", id, status, cost, err)
		}
	}
	// Such an id cannot be sent from outside.
	status, _, raw := g.post(t, "/v1/chat/completions", map[string]string{"X-Request-Id": ids[0]}, moneyBody)
	if code, _, _ := envelope(t, raw); status != http.StatusBadRequest || code != apierror.InvalidRequest {
		t.Fatalf("a derived id as x-request-id: %d %s", status, raw)
	}
	c.Close()
	g.checkMoney(t, g.profileID)
}

// An answer whose charge cannot be made durable is not completed: a non-streamed answer is
// 503 unavailable instead of its body, a stream ends with an error event instead of its usage
// cost and terminal event; neither is charged, and both are recorded as unavailable.
func TestAnswerWithheldWhenItsChargeCannotBeRecorded(t *testing.T) {
	g := startGen(t)
	key, pid := g.newProfile(t, "withheld-1", "1")
	if status, _, raw := g.postAs(t, key, "/v1/chat/completions", map[string]string{"X-Request-Id": "w-ok"}, moneyBody); status != 200 {
		t.Fatalf("%d %s", status, raw)
	}
	// The committer stops accepting charges (as at shutdown); holds and records still work.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.g.ledger.Close(ctx); err != nil {
		t.Fatal(err)
	}
	status, _, raw := g.postAs(t, key, "/v1/chat/completions", map[string]string{"X-Request-Id": "w-body"}, moneyBody)
	if code, _, rid := envelope(t, raw); status != http.StatusServiceUnavailable || code != apierror.Unavailable || rid != "w-body" {
		t.Fatalf("non-streamed: %d %s", status, raw)
	}
	status, _, raw = g.postAs(t, key, "/v1/chat/completions", map[string]string{"X-Request-Id": "w-stream"},
		`{"model":"m-money","stream":true,"max_tokens":12,"messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 || strings.Contains(string(raw), "[DONE]") || !strings.Contains(string(raw), apierror.Unavailable) {
		t.Fatalf("streamed: %d %s", status, raw)
	}
	for _, id := range []string{"w-body", "w-stream"} {
		var st string
		var cost decimal.NullDecimal
		deadline := time.Now().Add(3 * time.Second)
		for {
			err := g.g.Store.Pool.QueryRow(context.Background(), `SELECT status, cost FROM requests WHERE profile_id = $1 AND request_id = $2`,
				uuid.MustParse(pid), id).Scan(&st, &cost)
			if err == nil && st != "in_progress" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("record %s: %q %v", id, st, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if st != apierror.Unavailable || cost.Valid {
			t.Fatalf("record %s: %s %v", id, st, cost)
		}
	}
	if b := g.checkMoney(t, pid); !b.Equal(decimal.RequireFromString("0.988")) {
		t.Fatalf("balance %s, want only the first answer charged", b)
	}
}
