package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/store/storetest"
)

// Issue 16, finding 3: a provider that quotes its credential (or the client's key) in any
// error, not only 401/403, reaches neither the client nor the log with it.
func TestUpstreamEchoOfSecretsIsRedacted(t *testing.T) {
	t.Parallel()
	const secret = "prov-secret-0123456789"
	clientKeyEcho := "sk-gw-ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		echo := `credential ` + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + ` and ` + clientKeyEcho
		switch {
		case bytes.Contains(body, []byte("m-400")):
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"bad request with `+echo+`"}}`)
		case bytes.Contains(body, []byte("m-500")):
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"message":"crashed on `+echo+`"}}`)
		default: // a stream that fails after its first chunk
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"}}]}`+"\n\n")
			io.WriteString(w, `data: {"error":{"message":"stream broke on `+echo+`","type":"server_error"}}`+"\n\n")
		}
	}))
	t.Cleanup(up.Close)
	logs := &gatewaytest.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := &Config{DatabaseURL: storetest.DatabaseURL(t), HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0", AdminToken: adminToken,
		Env: func(name string) string {
			if name == "ECHO_KEY" {
				return secret
			}
			return ""
		}}
	g, err := Start(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Shutdown(5 * time.Second) })
	e := &env{t: t, g: g, base: "http://" + g.HTTPAddr}
	model := func(id string) string {
		return `{"id": "` + id + `", "family": "f", "routes": [{"endpoint_families": ["chat.completions"], "provider": "echo"}],
		  "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "1", "output": "2"}]}`
	}
	e.admin("POST", "/admin/v1/catalog:apply", `{"currency": "RUB", "families": [{"id": "f"}],
	  "providers": [{"id": "echo", "kind": "openai", "base_url": "`+up.URL+`/v1", "api_key_env": "ECHO_KEY"}],
	  "models": [`+model("m-400")+`, `+model("m-500")+`, `+model("m-stream")+`]}`)
	ge := &genEnv{env: e}
	ge.key, _ = ge.newProfile(t, "redact", "100")
	cases := []struct {
		name, body string
		status     int
	}{
		{"a 400 that quotes the credential", `{"model":"m-400","messages":[{"role":"user","content":"hi"}]}`, 400},
		{"a 500 that quotes the credential", `{"model":"m-500","messages":[{"role":"user","content":"hi"}]}`, 502},
		{"a stream error event that quotes it", `{"model":"m-stream","stream":true,"messages":[{"role":"user","content":"hi"}]}`, 200},
	}
	for _, tc := range cases {
		status, _, raw := ge.post(t, "/v1/chat/completions", nil, tc.body)
		if status != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, status, raw, tc.status)
		}
		if bytes.Contains(raw, []byte(secret)) || bytes.Contains(raw, []byte(clientKeyEcho)) {
			t.Errorf("%s: the client saw a secret: %s", tc.name, raw)
		}
		// The message itself is passed on, with the secrets hidden.
		if !bytes.Contains(raw, []byte("credential [redacted] and [redacted]")) {
			t.Errorf("%s: the upstream message did not arrive redacted: %s", tc.name, raw)
		}
	}
	if l := logs.String(); strings.Contains(l, secret) || strings.Contains(l, clientKeyEcho) {
		t.Errorf("the log holds a secret:\n%s", l)
	}
}
