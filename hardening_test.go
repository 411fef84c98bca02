package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	adminv1 "modelgateway/gen/gateway/admin/v1"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/rpc"
	"modelgateway/core/simulator"
	"modelgateway/core/store/storetest"
	"modelgateway/core/wire/apistatus"
	"modelgateway/front"
)

// startGenWith is startGen with the gateway's configuration adjusted.
func startGenWith(t *testing.T, opt func(*Config)) *genEnv {
	t.Helper()
	g := startGenWithDB(t, storetest.DatabaseURL(t), opt)
	doc := gatewaytest.GenCatalog(g.upURL)
	g.admin("POST", "/admin/v1/catalog:apply", doc)
	g.key, g.profileID = g.newProfile(t, "hard", "1000")
	return g
}

// startGenWithDB starts a gateway on dbURL, with the upstream simulator and no catalogue.
func startGenWithDB(t *testing.T, dbURL string, opt func(*Config)) *genEnv {
	t.Helper()
	rec := gatewaytest.StartUpstream(t, simulator.Options{})
	meter := &meterRec{out: map[string]rpc.Outcome{}, ch: make(chan rpc.Outcome, 1)}
	e := startGateway(t, dbURL, adminToken, func(c *Config) {
		c.Observer = meter
		c.Env = func(name string) string {
			if name == "UP_KEY" {
				return upstreamKey
			}
			return ""
		}
		opt(c)
	})
	return &genEnv{env: e, up: rec, meter: meter, upURL: rec.URL}
}

// rawRequest writes a request head on a fresh connection and returns the connection and a
// reader of the answer.
func rawRequest(t *testing.T, addr, head string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

// readAnswer reads one HTTP answer within the bound.
func readAnswer(t *testing.T, c net.Conn, br *bufio.Reader, within time.Duration) (*http.Response, []byte) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(within))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer within %v: %v", within, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

func postHead(path, key string, length int64, extra string) string {
	return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n", path, key, length, extra)
}

// Issue 16, finding 1: what the key, the route and the path decide is decided before a byte
// of the body is read. The client sends the head of a 32 MiB upload and nothing more: the
// answer comes anyway.
func TestBodyIsNotReadBeforeTheKeyAndModelAreChecked(t *testing.T) {
	t.Parallel()
	g := startGenWith(t, func(*Config) {})
	cases := []struct {
		name, path, key string
		status          int
		code            string
	}{
		{"a bogus key", "/v1/chat/completions", "bogus", 401, "invalid_key"},
		{"a bogus key on a multipart route", "/v1/audio/transcriptions", "bogus", 401, "invalid_key"},
		{"a model of the path that does not exist", "/v1beta/models/nope:generateContent", g.key, 404, "model_not_found"},
	}
	for _, tc := range cases {
		c, br := rawRequest(t, g.g.HTTPAddr, postHead(tc.path, tc.key, 32<<20-1, ""))
		resp, body := readAnswer(t, c, br, 10*time.Second)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, body, tc.status)
			continue
		}
		if code, _, _ := envelope(t, body); code != tc.code {
			t.Errorf("%s: code %s, want %s", tc.name, code, tc.code)
		}
	}
	// The same head with the valid key waits for the body: the key check is what answered.
	c, br := rawRequest(t, g.g.HTTPAddr, postHead("/v1/chat/completions", g.key, 100, ""))
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("the gateway answered a valid key's request before its body came")
	}
}

// A body that stalls is cut off by the idle timeout (and the minimum rate), not awaited
// forever; the answer is the envelope.
func TestStalledBodyIsCutOff(t *testing.T) {
	t.Parallel()
	g := startGenWith(t, func(c *Config) { c.Limits = front.Limits{BodyIdle: 500 * time.Millisecond} })
	c, br := rawRequest(t, g.g.HTTPAddr, postHead("/v1/chat/completions", g.key, 1000, "")+`{"model":"m-openai",`)
	start := time.Now()
	resp, body := readAnswer(t, c, br, 10*time.Second)
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("stalled body: %d %s, want 408", resp.StatusCode, body)
	}
	if code, _, _ := envelope(t, body); code != "invalid_request_error" {
		t.Errorf("code %s", code)
	}
	if waited := time.Since(start); waited < 400*time.Millisecond {
		t.Errorf("cut off after %v, before the idle timeout", waited)
	}

	// A body that keeps coming, slowly but within the limits, is served: the deadline moves.
	c, br = rawRequest(t, g.g.HTTPAddr, postHead("/v1/chat/completions", g.key, 80, ""))
	payload := `{"model":"m-openai","messages":[{"role":"user","content":"hi"}]}`
	payload += strings.Repeat(" ", 80-len(payload))
	for i := 0; i < len(payload); i += 20 {
		time.Sleep(150 * time.Millisecond)
		if _, err := io.WriteString(c, payload[i:i+20]); err != nil {
			t.Fatal(err)
		}
	}
	if resp, body := readAnswer(t, c, br, 20*time.Second); resp.StatusCode != 200 {
		t.Fatalf("slow but steady body: %d %s", resp.StatusCode, body)
	}
}

// The bytes of bodies in flight are bounded per key: a second upload that does not fit is
// refused with rate_limited and Retry-After; once the first ends, the next fits. Bodies are
// charged as they arrive, so both uploads send most of their 700 KiB.
func TestBodyBudgetPerKey(t *testing.T) {
	t.Parallel()
	g := startGenWith(t, func(c *Config) { c.Limits = front.Limits{KeyBodyBudget: 1 << 20, ProfileBodyBudget: -1} })
	first, _ := rawRequest(t, g.g.HTTPAddr, postHead("/v1/chat/completions", g.key, 700<<10, "")+strings.Repeat(" ", 600<<10))
	budget := g.g.front.BodyBudget()
	waitBudget(t, budget, "the first upload", func() bool { return budget.Used() == 700<<10 })
	c, br := rawRequest(t, g.g.HTTPAddr, postHead("/v1/chat/completions", g.key, 700<<10, ""))
	go func() { _, _ = c.Write(bytes.Repeat([]byte(" "), 600<<10)) }()
	resp, body := readAnswerOrNil(c, br, 10*time.Second)
	if resp == nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second upload of the key: %v %s, want 429 with Retry-After", resp, body)
	}
	if code, _, _ := envelope(t, body); code != "rate_limited" {
		t.Fatalf("code %s, want rate_limited", code)
	}
	first.Close()
	// The share comes back when the first request ends.
	payload := `{"model":"m-openai","messages":[{"role":"user","content":"hi"}]}`
	for deadline := time.Now().Add(10 * time.Second); ; {
		status, _, raw := g.post(t, "/v1/chat/completions", nil, payload+strings.Repeat(" ", 700<<10-len(payload)))
		if status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the first upload ended: %d %s", status, raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readAnswerOrNil(c net.Conn, br *bufio.Reader, within time.Duration) (*http.Response, []byte) {
	_ = c.SetReadDeadline(time.Now().Add(within))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// Issue 16, finding 8: the small ones of the HTTP surface.
func TestRequestFramingAnswers(t *testing.T) {
	t.Parallel()
	g := startGenWith(t, func(*Config) {})
	chat := `{"model":"m-openai","messages":[{"role":"user","content":"hi"}]}`
	gz := func(s string) string {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = io.WriteString(zw, s)
		_ = zw.Close()
		return b.String()
	}
	// 33 MiB of spaces compress to about 33 KiB: the decoded size is what the limit bounds.
	bomb := gz(`{"model":"m-openai","messages":[]}` + strings.Repeat(" ", 33<<20))
	cases := []struct {
		name    string
		headers map[string]string
		body    string
		status  int
		code    string
	}{
		{"gzip body is decoded", map[string]string{"Content-Encoding": "gzip"}, gz(chat), 200, ""},
		{"gzip bomb is bounded by the decoded size", map[string]string{"Content-Encoding": "gzip"}, bomb, 413, "payload_too_large"},
		{"broken gzip is a bad request", map[string]string{"Content-Encoding": "gzip"}, "not gzip", 400, "invalid_request_error"},
		{"another coding is 415", map[string]string{"Content-Encoding": "br"}, chat, 415, "unsupported_content_type"},
		{"text/plain is refused on a text route", map[string]string{"Content-Type": "text/plain"}, chat, 415, "unsupported_content_type"},
		{"a form is refused on a text route", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, chat, 415, "unsupported_content_type"},
		{"JSON with a charset is fine", map[string]string{"Content-Type": "application/json; charset=utf-8"}, chat, 200, ""},
		{"no content type is fine", map[string]string{"Content-Type": ""}, chat, 200, ""},
		{"a bad key wins over a bad content type", map[string]string{"Content-Type": "text/plain", "Authorization": "Bearer bogus"}, chat, 401, "invalid_key"},
	}
	for _, tc := range cases {
		status, hdr, raw := g.post(t, "/v1/chat/completions", tc.headers, tc.body)
		if status != tc.status {
			t.Errorf("%s: %d %.300s, want %d", tc.name, status, raw, tc.status)
			continue
		}
		if tc.code != "" {
			code, _, id := envelope(t, raw)
			if code != tc.code || id == "" || id != hdr.Get("X-Request-Id") {
				t.Errorf("%s: code %s id %q/%q, want %s", tc.name, code, id, hdr.Get("X-Request-Id"), tc.code)
			}
		}
	}

	// Headers over the server's limit: the envelope, not net/http's plain text.
	c, br := rawRequest(t, g.g.HTTPAddr, "GET /v1/models HTTP/1.1\r\nHost: gw\r\nX-Big: "+strings.Repeat("a", 2<<20)+"\r\n\r\n")
	resp, body := readAnswer(t, c, br, 10*time.Second)
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("oversized headers: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if code, _, id := envelope(t, body); code != "invalid_request_error" || id == "" || id != resp.Header.Get("X-Request-Id") {
		t.Errorf("oversized headers: code %s id %q", code, id)
	}
}

// A wrong admin token is answered from the headers: its body, up to the admin limit, is never
// waited for, read or decoded, while the right token's body is.
func TestAdminWrongTokenIsRefusedBeforeItsBody(t *testing.T) {
	t.Parallel()
	e := startGateway(t, storetest.DatabaseURL(t), adminToken)
	head := func(token string) string {
		return "POST /admin/v1/profiles HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + token +
			"\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"
	}
	// The right token: the gateway waits for the body (no answer while it is missing)...
	c, br := rawRequest(t, e.g.HTTPAddr, head(adminToken))
	if resp, body := readAnswerOrNil(c, br, 500*time.Millisecond); resp != nil {
		t.Fatalf("right token, body not sent: answered %d %s before the body", resp.StatusCode, body)
	}
	// ...and a wrong one is refused at once, the body never sent.
	for _, token := range []string{"wrong", adminToken + "x"} {
		c, br := rawRequest(t, e.g.HTTPAddr, head(token))
		resp, body := readAnswer(t, c, br, 5*time.Second)
		if resp.StatusCode != 401 {
			t.Fatalf("wrong token %q, body not sent: %d %s, want 401 at once", token, resp.StatusCode, body)
		}
		if code, _, _ := envelope(t, body); code != "invalid_admin_token" {
			t.Fatalf("wrong token %q: code %s, want invalid_admin_token", token, code)
		}
	}
}

// Issue 16, finding 7: the admin API on a listener of its own, the bearer scheme in any case,
// and failed authentications limited per address without ever refusing the right token.
func TestAdminListenerAndAuthentication(t *testing.T) {
	t.Parallel()
	e := startGateway(t, storetest.DatabaseURL(t), adminToken, func(c *Config) { c.AdminHTTPAddr = "127.0.0.1:0" })
	if e.g.AdminHTTPAddr == "" {
		t.Fatal("no admin listener")
	}
	admin := &env{t: t, g: e.g, base: "http://" + e.g.AdminHTTPAddr}
	status, _, body := admin.do("POST", "/admin/v1/profiles", map[string]string{"Authorization": "bEaReR " + adminToken}, `{"display_name":"A","external_ref":"adm-1"}`)
	if status != 200 {
		t.Fatalf("admin listener with a lower-case scheme: %d %v", status, body)
	}
	if status, _, body := e.do("POST", "/admin/v1/profiles", bearer(adminToken), `{"display_name":"B","external_ref":"adm-2"}`); status != 404 || code(body) != "not_found" {
		t.Fatalf("admin route on the client listener: %d %v, want 404", status, body)
	}
	if status, _, _ := admin.do("GET", "/v1/models", bearer("x"), ""); status != 404 {
		t.Fatalf("client route on the admin listener: %d, want 404", status)
	}
	// Ten wrong tokens are answered 401 and the eleventh 429; the right token from the same
	// address still passes at once (issue 30: behind an ingress every client has one
	// address, and a guesser must not lock the operator out), and wrong ones stay throttled.
	profile := "/admin/v1/profiles/" + body["id"].(string)
	for i := range 10 {
		if status, _, body := admin.do("GET", profile, bearer(fmt.Sprint("wrong-", i)), ""); status != 401 {
			t.Fatalf("wrong token %d: %d %v", i, status, body)
		}
	}
	status, hdr, out := admin.do("GET", profile, bearer("wrong-10"), "")
	if status != 429 || code(out) != "rate_limited" || hdr.Get("Retry-After") == "" {
		t.Fatalf("eleventh wrong token: %d %v retry-after %q, want 429 rate_limited", status, out, hdr.Get("Retry-After"))
	}
	for i := range 3 {
		if status, _, out := admin.do("GET", profile, bearer(adminToken), ""); status != 200 || out["id"] != body["id"] {
			t.Fatalf("right token after the failures (%d): %d %v, want 200", i, status, out)
		}
	}
	if status, _, out := admin.do("GET", profile, nil, ""); status != 429 || code(out) != "rate_limited" {
		t.Fatalf("no token after the right one: %d %v, want still 429 rate_limited", status, out)
	}

	// The gRPC listener limits its callers the same way, by their address.
	conn, err := grpc.NewClient(e.g.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cl := adminv1.NewAdminServiceClient(conn)
	get := func(token string) error {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "bearer "+token)
		_, err := cl.GetProfile(ctx, &adminv1.GetProfileRequest{Id: body["id"].(string)})
		return err
	}
	if err := get(adminToken); err != nil {
		t.Fatalf("gRPC with the right token and a lower-case scheme: %v", err)
	}
	for i := range 10 {
		if e := apistatus.FromError(get(fmt.Sprint("wrong-", i))); e.Code != "invalid_admin_token" {
			t.Fatalf("gRPC wrong token %d: %v", i, e)
		}
	}
	if e := apistatus.FromError(get("wrong-10")); e.Code != "rate_limited" || e.RetryAfter < 1 {
		t.Fatalf("gRPC eleventh wrong token: %+v, want rate_limited", e)
	}
	if err := get(adminToken); err != nil {
		t.Fatalf("gRPC right token after the failures: %v", err)
	}
	if e := apistatus.FromError(get("wrong-11")); e.Code != "rate_limited" {
		t.Fatalf("gRPC wrong token after the right one: %+v, want still rate_limited", e)
	}
}
