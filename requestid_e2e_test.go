package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/store/storetest"
	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
	"modelgateway/core/wire/requestid"
)

// gatedUpstream is an OpenAI-style upstream: a streamed answer of `words` one-word chunks
// that stops after the first until its gate opens, then reports usage of exactly `words`
// output tokens; a plain answer is one word and 1 output token.
type gatedUpstream struct {
	words int
	mu    sync.Mutex
	gate  chan struct{}
}

func (u *gatedUpstream) hold() chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.gate = make(chan struct{})
	return u.gate
}

func (u *gatedUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if !strings.Contains(string(body), `"stream":true`) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":0,"completion_tokens":1,"total_tokens":1}}`)
		return
	}
	u.mu.Lock()
	gate := u.gate
	u.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	for i := range u.words {
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"up\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w \"},\"finish_reason\":null}]}\n\n")
		if i == 0 {
			fl.Flush()
			if gate != nil {
				select {
				case <-gate:
				case <-r.Context().Done():
					return
				}
			}
		}
	}
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"up\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"up\",\"choices\":[],\"usage\":{\"prompt_tokens\":0,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n", u.words, u.words)
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}

// startGated starts a gateway whose m-long (output 1000 per 1M tokens, input free) answers
// from a gatedUpstream of 3,000 words: a full answer costs exactly 3.
func startGated(t *testing.T) (*genEnv, *gatedUpstream) {
	t.Helper()
	up := &gatedUpstream{words: 3000}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	g := startGenOn(t, storetest.DatabaseURL(t), false)
	g.admin("POST", "/admin/v1/catalog:apply", `{"currency":"RUB","families":[{"id":"fam"}],
		"providers":[{"id":"gated","kind":"openai","base_url":"`+srv.URL+`/v1","api_key_env":"UP_KEY"}],
		"models":[{"id":"m-long","family":"fam","routes":[{"endpoint_families":["chat.completions"],"provider":"gated","upstream_model":"up"}],
		  "prices":[{"endpoint_families":["chat.completions"],"billing_mode":"per_token","input":"0","output":"1000"}]}]}`)
	return g, up
}

const (
	longBody  = `{"model":"m-long","max_tokens":3000,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	cheapBody = `{"model":"m-long","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`
)

var longCost = decimal.RequireFromString("3")

// openStream starts a streamed request and returns its answer with the body unread.
func (g *genEnv) openStream(t *testing.T, key, id, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("POST", g.base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	if id != "" {
		req.Header.Set("X-Request-Id", id)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %d %s", resp.StatusCode, raw)
	}
	// The first chunk is through: the answer is running.
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	return resp
}

// recordCost waits for the request's record to be settled and returns its status and cost.
func (g *genEnv) recordCost(t *testing.T, pid, id string) (string, decimal.NullDecimal) {
	t.Helper()
	var status string
	var cost decimal.NullDecimal
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := g.g.Store.Pool.QueryRow(context.Background(), `SELECT status, cost FROM requests WHERE profile_id = $1 AND request_id = $2`,
			uuid.MustParse(pid), id).Scan(&status, &cost)
		if err == nil && status != "in_progress" {
			return status, cost
		}
		if time.Now().After(deadline) {
			t.Fatalf("record %s: %q %v", id, status, err)
		}
	}
}

// Issue 30, request ids: a streamed answer's id is in its headers at once. A second, cheap
// request sent with that id while the stream runs committed first and the long answer then
// settled to almost nothing (3,000 tokens charged 0.00012 instead of 0.18018). Gateway ids
// now have a form clients may not send: the reuse is 400, in every letter case and from any
// profile, and the long answer is charged in full - as much as the same answer unattacked.
func TestAStreamingAnswersIDCannotBeReusedWhileItRuns(t *testing.T) {
	t.Parallel()
	g, up := startGated(t)
	key, pid := g.newProfile(t, "victim", "10")
	other, otherPID := g.newProfile(t, "other", "10")

	// The positive case: the same answer, unattacked, costs exactly 3.
	resp := g.openStream(t, key, "", longBody)
	io.Copy(io.Discard, resp.Body)
	plain := resp.Header.Get("X-Request-Id")
	if len(plain) < len(requestid.Prefix)+26 || !requestid.Gateway(plain) {
		t.Fatalf("gateway-made id %q is not gw- and 26 or more characters", plain)
	}
	if status, cost := g.recordCost(t, pid, plain); status != "ok" || !cost.Valid || !cost.Decimal.Equal(longCost) {
		t.Fatalf("unattacked answer: %s cost %v, want ok %s", status, cost, longCost)
	}

	// The attack: the stream is held after its first chunk while its id is reused.
	gate := up.hold()
	resp = g.openStream(t, key, "", longBody)
	id := resp.Header.Get("X-Request-Id")
	if !requestid.Gateway(id) || id == plain {
		t.Fatalf("id %q of the second stream", id)
	}
	variants := []string{id, strings.ToUpper(id[:2]) + id[2:], "Gw" + id[2:], "gW" + id[2:]}
	for _, k := range []string{key, other} {
		for _, v := range variants {
			status, hdr, raw := g.postAs(t, k, "/v1/chat/completions", map[string]string{"X-Request-Id": v}, cheapBody)
			code, _, echoed := envelope(t, raw)
			if status != 400 || code != apierror.InvalidRequest {
				t.Fatalf("cheap request reusing %q: %d %s, want 400 invalid_request_error", v, status, raw)
			}
			if echoed == v || !requestid.Gateway(echoed) || hdr.Get("X-Request-Id") != echoed {
				t.Fatalf("refusal of %q answered with id %q (header %q)", v, echoed, hdr.Get("X-Request-Id"))
			}
		}
	}
	// A cheap request with an id of its own is served and charged (the path the attack used).
	if status, hdr, raw := g.postAs(t, key, "/v1/chat/completions", map[string]string{"X-Request-Id": "cheap-1"}, cheapBody); status != 200 || hdr.Get("X-Request-Cost") != "0.001" {
		t.Fatalf("cheap request: %d cost %q %s", status, hdr.Get("X-Request-Cost"), raw)
	}
	close(gate)
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	if status, cost := g.recordCost(t, pid, id); status != "ok" || !cost.Valid || !cost.Decimal.Equal(longCost) {
		t.Fatalf("attacked answer: %s cost %v, want ok %s", status, cost, longCost)
	}
	if b := g.checkMoney(t, pid); !b.Equal(decimal.RequireFromString("3.999")) {
		t.Fatalf("victim's balance %s, want 10 - 3 - 3 - 0.001", b)
	}
	if b := g.checkMoney(t, otherPID); !b.Equal(decimal.NewFromInt(10)) {
		t.Fatalf("other profile's balance %s, want 10 untouched", b)
	}
}

// A client id is taken once whatever the key, profile, route or replica: each second use is
// duplicate_request_id (409) and charges nothing; the same requests with fresh ids are served.
// Two replicas racing with one fresh id for two profiles serve exactly one.
func TestAClientRequestIDIsTakenOnEveryRouteProfileAndReplica(t *testing.T) {
	t.Parallel()
	db := storetest.DatabaseURL(t)
	a := startGenOn(t, db, true)
	b := startGenOn(t, db, false)
	k1, p1 := a.newProfile(t, "id-p1", "10")
	k1b := a.admin("POST", "/admin/v1/profiles/"+p1+"/keys", `{"name":"second","allowed_endpoints":["*"],"allowed_models":["*"]}`)["secret"].(string)
	k2, p2 := a.newProfile(t, "id-p2", "10")
	waitForKey(t, b, k2)
	waitForKey(t, b, k1b)

	const msgs = `{"model":"m-anthropic","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	const count = `{"model":"m-anthropic","messages":[{"role":"user","content":"hi"}]}`
	uses := []struct {
		name       string
		g          *genEnv
		key, path  string
		body       string
		hdr        map[string]string
		chargesNew int
	}{
		{"other key of the profile", a, k1b, "/v1/chat/completions", moneyBody, nil, 1},
		{"other profile", a, k2, "/v1/chat/completions", moneyBody, nil, 1},
		{"other profile on the other replica", b, k2, "/v1/chat/completions", moneyBody, nil, 1},
		{"same key on the other replica", b, k1, "/v1/chat/completions", moneyBody, nil, 1},
		{"other route", a, k2, "/v1/messages", msgs, anthropicVersion, 1},
		{"a counting route", b, k2, "/v1/messages/count_tokens", count, anthropicVersion, 0},
	}
	// The first use on replica a.
	if status, _, raw := a.postAs(t, k1, "/v1/chat/completions", map[string]string{"X-Request-Id": "taken-1"}, moneyBody); status != 200 {
		t.Fatalf("first use: %d %s", status, raw)
	}
	a.settled(t, p1, 1)
	charges := map[string]int{p1: 1, p2: 0}
	for i, u := range uses {
		pid := p1
		if u.key == k2 {
			pid = p2
		}
		// Positive: the request itself is served with a fresh id.
		h := map[string]string{"X-Request-Id": fmt.Sprintf("fresh-%d", i)}
		for k, v := range u.hdr {
			h[k] = v
		}
		if status, _, raw := u.g.postAs(t, u.key, u.path, h, u.body); status != 200 {
			t.Fatalf("%s with a fresh id: %d %s", u.name, status, raw)
		}
		charges[pid] += u.chargesNew
		u.g.settled(t, pid, charges[pid])
		// The taken id: refused, nothing charged.
		h["X-Request-Id"] = "taken-1"
		status, _, raw := u.g.postAs(t, u.key, u.path, h, u.body)
		if code, _, echoed := envelope(t, raw); status != http.StatusConflict || code != apierror.DuplicateRequestID || echoed != "taken-1" {
			t.Fatalf("%s reusing the id: %d %s, want 409 duplicate_request_id", u.name, status, raw)
		}
	}
	// The race: one fresh id sent at once by both profiles through both replicas.
	var wg sync.WaitGroup
	statuses := make([]int, 2)
	for i, side := range []struct {
		g   *genEnv
		key string
	}{{a, k1}, {b, k2}} {
		wg.Go(func() {
			statuses[i], _, _ = side.g.postAs(t, side.key, "/v1/chat/completions", map[string]string{"X-Request-Id": "raced-1"}, moneyBody)
		})
	}
	wg.Wait()
	if (statuses[0] == 200) == (statuses[1] == 200) || statuses[0]+statuses[1] != 200+http.StatusConflict {
		t.Fatalf("two replicas racing with one id: %v, want one 200 and one 409", statuses)
	}
	if statuses[0] == 200 {
		charges[p1]++
	} else {
		charges[p2]++
	}
	a.settled(t, p1, charges[p1])
	a.settled(t, p2, charges[p2])
	time.Sleep(200 * time.Millisecond) // a wrongly charged duplicate would settle by now
	for _, pid := range []string{p1, p2} {
		a.checkMoney(t, pid)
		if _, _, n := a.ledgerOf(t, pid); n != charges[pid] {
			t.Fatalf("profile %s: %d charges, want %d", pid, n, charges[pid])
		}
	}
	var records int
	if err := a.g.Store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM requests WHERE request_id = 'taken-1'`).Scan(&records); err != nil || records != 1 {
		t.Fatalf("%d records of the taken id, %v", records, err)
	}
}

// waitForKey waits until a replica knows a key made through another one.
func waitForKey(t *testing.T, g *genEnv, key string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		status, _, _ := g.do("GET", "/v1/models", map[string]string{"Authorization": "Bearer " + key}, "")
		if status == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica does not know the key: %d", status)
		}
	}
}

// Ids of the gateway's form are refused from clients on every route: each HTTP route family,
// realtime's handshake, the admin API and the gRPC listener; the same requests with another
// id pass the id check. Nothing is charged.
func TestGatewayFormIDsAreRefusedFromClients(t *testing.T) {
	t.Parallel()
	g := startGen(t)
	const msgs = `{"model":"m-anthropic","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	const gemini = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":5}}`
	routes := []struct{ path, body string }{
		{"/v1/chat/completions", moneyBody},
		{"/v1/messages", msgs},
		{"/v1/messages/count_tokens", `{"model":"m-anthropic","messages":[{"role":"user","content":"hi"}]}`},
		{"/v1beta/models/m-gemini:generateContent", gemini},
		{"/v1beta/models/m-gemini:countTokens", gemini},
	}
	forms := []string{"gw-0123456789abcdef0123456789abcdef", "GW-client-made", "Gw-x", "gW-"}
	for i, rt := range routes {
		h := map[string]string{"Anthropic-Version": "2023-06-01", "X-Request-Id": fmt.Sprintf("ok-%d", i)}
		if status, _, raw := g.post(t, rt.path, h, rt.body); status != 200 {
			t.Fatalf("%s with a client id: %d %s", rt.path, status, raw)
		}
		for _, id := range forms {
			h["X-Request-Id"] = id
			status, _, raw := g.post(t, rt.path, h, rt.body)
			if code, _, _ := envelope(t, raw); status != 400 || code != apierror.InvalidRequest {
				t.Fatalf("%s with id %q: %d %s", rt.path, id, status, raw)
			}
		}
	}
	// Realtime: the handshake is refused before the upgrade; with a client id it gets past
	// the id check (to the model's own answer).
	for _, id := range []string{"rt-ok", forms[1]} {
		_, resp, err := g.dialRealtime(t, "m-openai", http.Header{"Authorization": {"Bearer " + g.key}, "X-Request-Id": {id}})
		if err == nil || resp == nil {
			t.Fatalf("realtime with id %q: %v", id, err)
		}
		raw, _ := io.ReadAll(resp.Body)
		code, msg, _ := envelope(t, raw)
		refused := resp.StatusCode == 400 && code == apierror.InvalidRequest && strings.Contains(msg, "x-request-id")
		if refused != (id == forms[1]) {
			t.Fatalf("realtime with id %q: %d %s", id, resp.StatusCode, raw)
		}
	}
	// Admin API.
	for _, id := range []string{"adm-ok", forms[2]} {
		status, _, _ := g.do("GET", "/admin/v1/profiles/"+g.profileID, map[string]string{"Authorization": "Bearer " + adminToken, "X-Request-Id": id}, "")
		if (status == 400) != (id == forms[2]) {
			t.Fatalf("admin with id %q: %d", id, status)
		}
	}
	// The gRPC listener, even with the front's internal "generated" mark.
	conn, err := grpc.NewClient(g.g.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	core := corev1.NewCoreServiceClient(conn)
	for _, id := range []string{"grpc-ok", forms[0], forms[1]} {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+g.key,
			"x-request-id", id, "x-request-id-generated", "1")
		max := int64(12)
		err := drain(core.Generate(ctx, &corev1.GenerateRequest{EndpointFamily: "chat.completions", Protocol: corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS,
			Model: "m-money", RawBody: []byte(moneyBody), MaxOutputTokens: &max}))
		if refused := apistatus.FromError(err).Code == apierror.InvalidRequest; refused != (id != "grpc-ok") {
			t.Fatalf("gRPC with id %q: %v", id, err)
		}
	}
	g.checkMoney(t, g.profileID)
}

// drain reads a Generate stream to its end.
func drain(stream grpc.ServerStreamingClient[corev1.GenerateEvent], err error) error {
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

// An id is taken when its request passes the key checks, whatever refuses the request after:
// a body refused as malformed, as a duplicate-member body, as the wrong content type, takes
// its client id, and the id's next use is duplicate_request_id. A request refused for its key
// takes nothing: its id serves afterwards.
func TestARefusedRequestsIDIsTakenOnceItsKeyPassed(t *testing.T) {
	t.Parallel()
	g := startGen(t)
	post := func(key, id, ctype, body string) (int, string) {
		h := map[string]string{"Authorization": "Bearer " + key, "X-Request-Id": id}
		if ctype != "" {
			h["Content-Type"] = ctype
		}
		status, _, raw := g.post(t, "/v1/chat/completions", h, body)
		if status == 200 {
			return status, "ok"
		}
		code, _, _ := envelope(t, raw)
		return status, code
	}
	// The positive case: a fresh id serves once, then is a duplicate.
	if status, _ := post(g.key, "taken-0", "", moneyBody); status != 200 {
		t.Fatalf("a fresh id: %d", status)
	}
	if _, code := post(g.key, "taken-0", "", moneyBody); code != apierror.DuplicateRequestID {
		t.Fatalf("the same id again: %s", code)
	}
	for i, c := range []struct{ name, ctype, body, code string }{
		{"a malformed body", "", `{"model":`, apierror.InvalidRequest},
		{"a duplicate member", "", `{"model":"m-money","model":"m-money","max_tokens":12,"messages":[{"role":"user","content":"hi"}]}`, apierror.InvalidRequest},
		{"a form body", "application/x-www-form-urlencoded", moneyBody, apierror.UnsupportedContentType},
	} {
		id := fmt.Sprintf("taken-%d", i+1)
		if _, code := post(g.key, id, c.ctype, c.body); code != c.code {
			t.Fatalf("%s: %s, want %s", c.name, code, c.code)
		}
		if _, code := post(g.key, id, "", moneyBody); code != apierror.DuplicateRequestID {
			t.Errorf("%s: the id's next use is %s, want duplicate_request_id", c.name, code)
		}
	}
	// A bad key passes no check: its id is not taken.
	if _, code := post("sk-gw-bogus", "free-1", "", moneyBody); code != apierror.InvalidKey {
		t.Fatalf("a bogus key: %s", code)
	}
	if status, code := post(g.key, "free-1", "", moneyBody); status != 200 {
		t.Errorf("the id of a request refused for its key: %d %s, want it free", status, code)
	}
	g.checkMoney(t, g.profileID)
}
