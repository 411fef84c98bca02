package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/store/storetest"
)

// startMediaWith is startMedia on a database of the caller's, with the configuration adjusted.
func startMediaWith(t *testing.T, dbURL string, opt func(*Config)) *genEnv {
	t.Helper()
	g := startGenWithDB(t, dbURL, opt)
	g.admin("POST", "/admin/v1/catalog:apply", strings.ReplaceAll(mediaCatalog, "{{UP}}", g.upURL))
	g.key, g.profileID = g.newProfile(t, "rt-hard", "1000")
	return g
}

// closeOf reads until the session's close frame (gatewaytest.CloseOf).
func closeOf(t *testing.T, c *websocket.Conn, within time.Duration) *websocket.CloseError {
	t.Helper()
	return gatewaytest.CloseOf(t, c, within)
}

// Issue 16, finding 4: a key revoked on another replica closes its open realtime session
// with 1008 within the second the contract gives HTTP requests.
func TestRealtimeSessionEndsWhenItsKeyIsRevoked(t *testing.T) {
	t.Parallel()
	dbURL := storetest.DatabaseURL(t)
	a := startMediaWith(t, dbURL, func(*Config) {})
	b := startGenWithDB(t, dbURL, func(*Config) {})
	k := a.admin("POST", "/admin/v1/profiles/"+a.profileID+"/keys", `{"name":"rt","allowed_endpoints":["*"],"allowed_models":["*"]}`)
	c, _, err := a.dialRealtime(t, "rt", http.Header{"Authorization": {"Bearer " + k["secret"].(string)}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	until(t, c, "session.created")
	ask(t, c, "hello")
	until(t, c, "response.done") // the session works before the revoke
	b.admin("POST", "/admin/v1/keys/"+k["key"].(map[string]any)["id"].(string)+":revoke", `{}`)
	revoked := time.Now()
	ce := closeOf(t, c, 5*time.Second)
	if took := time.Since(revoked); took > time.Second {
		t.Errorf("closed %v after the revoke, want within 1 s", took)
	}
	if ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "invalid_key") {
		t.Errorf("close %d %q, want 1008 invalid_key", ce.Code, ce.Text)
	}
}

// The optional maximum session length closes a session with 1008 when it is reached.
func TestRealtimeMaximumSessionLength(t *testing.T) {
	t.Parallel()
	g := startMediaWith(t, storetest.DatabaseURL(t), func(c *Config) { c.RealtimeMaxSession = 700 * time.Millisecond })
	c, _, err := g.dialRealtime(t, "rt", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	opened := time.Now()
	until(t, c, "session.created")
	ce := closeOf(t, c, 10*time.Second)
	if ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "session_too_long") {
		t.Errorf("close %d %q, want 1008 session_too_long", ce.Code, ce.Text)
	}
	if took := time.Since(opened); took < 600*time.Millisecond {
		t.Errorf("closed after %v, before the limit", took)
	}
}

// Issue 16, finding 8: the 17th session of a key is 429 rate_limited with Retry-After, and
// only allow-listed query parameters reach the upstream.
func TestRealtimeSessionLimitAndQuery(t *testing.T) {
	t.Parallel()
	g := startMediaWith(t, storetest.DatabaseURL(t), func(*Config) {})
	url := "ws" + strings.TrimPrefix(g.base, "http") + "/v1/realtime?model=rt&intent=transcription&api-version=evil&debug=1"
	h := http.Header{"Authorization": {"Bearer " + g.key}}
	for i := range 16 {
		c, _, err := websocket.DefaultDialer.Dial(url, h)
		if err != nil {
			t.Fatalf("session %d: %v", i+1, err)
		}
		defer c.Close()
		until(t, c, "session.created")
	}
	if up := g.up.Last(t); !strings.Contains(up.Path, "intent=transcription") || strings.Contains(up.Path, "api-version") || strings.Contains(up.Path, "debug") {
		t.Errorf("upstream handshake %s: only intent may pass", up.Path)
	}
	_, resp, err := websocket.DefaultDialer.Dial(url, h)
	if err == nil || resp == nil {
		t.Fatalf("the 17th session: %v", err)
	}
	raw, _ := io.ReadAll(resp.Body)
	if code, _, _ := envelope(t, raw); resp.StatusCode != 429 || code != "rate_limited" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("the 17th session: %d %s retry-after %q", resp.StatusCode, code, resp.Header.Get("Retry-After"))
	}
}
