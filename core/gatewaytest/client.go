package gatewaytest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Bearer is the Authorization header of a key.
func Bearer(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + key} }

// Raw sends one request and returns status, headers and body; err is a transport failure.
// A header with an empty value is removed rather than sent.
func (g *Gateway) Raw(method, path string, headers map[string]string, body string) (int, http.Header, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, g.Base+path, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := g.Client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, raw, err
}

// Do sends a request and decodes a JSON answer; a transport failure or a non-JSON answer
// fails the test.
func (g *Gateway) Do(method, path string, headers map[string]string, body string) (int, http.Header, map[string]any) {
	g.t.Helper()
	status, h, raw, err := g.Raw(method, path, headers, body)
	if err != nil {
		g.t.Fatalf("%s %s: %v", method, path, err)
	}
	var out map[string]any
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			g.t.Fatalf("%s %s: non-JSON answer %d %q", method, path, status, raw)
		}
	}
	return status, h, out
}

// Admin calls an admin HTTP route with the admin token; anything but 200 fails the test.
func (g *Gateway) Admin(method, path, body string) map[string]any {
	g.t.Helper()
	status, _, out := g.Do(method, path, Bearer(AdminToken), body)
	if status != http.StatusOK {
		g.t.Fatalf("admin %s %s on %s: %d %v", method, path, g.Name, status, out)
	}
	return out
}

// NewProfile makes a profile (external_ref ref, a fresh one when empty) with credit (none when
// "0") and a key that may use everything.
func (g *Gateway) NewProfile(ref, credit string) (key, profileID string) {
	g.t.Helper()
	if ref == "" {
		ref = "p:" + uuid.NewString()
	}
	p := g.Admin("POST", "/admin/v1/profiles", `{"display_name":"P","external_ref":"`+ref+`"}`)
	pid := p["id"].(string)
	if credit != "0" {
		g.Admin("POST", "/admin/v1/profiles/"+pid+":credit", `{"amount":"`+credit+`","reason":"topup","idempotency_key":"c1"}`)
	}
	k := g.Admin("POST", "/admin/v1/profiles/"+pid+"/keys", `{"name":"all","allowed_endpoints":["*"],"allowed_models":["*"]}`)
	return k["secret"].(string), pid
}

// WaitFor polls cond until it holds or bound passes, which fails the test.
func WaitFor(t testing.TB, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Eventually(bound, cond) {
		t.Fatalf("%s: not within %v", what, bound)
	}
}

// Eventually polls cond until it holds (true) or bound passes (false).
func Eventually(bound time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Code is the spec error envelope's code in a decoded answer ("" when there is none).
func Code(m map[string]any) string {
	errObj, _ := m["error"].(map[string]any)
	c, _ := errObj["code"].(string)
	return c
}

// Envelope decodes the spec error envelope of a raw answer; anything else fails the test, and
// a type other than service_error is reported.
func Envelope(t testing.TB, raw []byte) (code, message, requestID string) {
	t.Helper()
	var e struct {
		Error struct {
			Code, Message, Type string
			RequestID           string `json:"request_id"`
		}
	}
	if err := json.Unmarshal(raw, &e); err != nil || e.Error.Code == "" {
		t.Fatalf("not an error envelope: %s", raw)
	}
	if e.Error.Type != "service_error" {
		t.Errorf("error.type = %q, want service_error", e.Error.Type)
	}
	return e.Error.Code, e.Error.Message, e.Error.RequestID
}

// GetCatalog fetches /v1/catalog raw, optionally revalidating.
func GetCatalog(t testing.TB, base, inm string) (int, string, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/catalog", nil)
	if inm != "" {
		req.Header.Set("If-None-Match", inm)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("ETag"), b
}

// ScrapeUntil reads /metrics at addr until it contains want and returns it: the background
// goroutine records soon after each response.
func ScrapeUntil(t testing.TB, addr, want string) string {
	t.Helper()
	var body []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if bytes.Contains(body, []byte(want)) {
			return string(body)
		}
	}
	t.Fatalf("/metrics never showed %s:\n%s", want, body)
	return ""
}
