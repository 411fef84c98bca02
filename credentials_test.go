package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"modelgateway/core/store/storetest"
)

// syncBuffer is a log sink the gateway's goroutines may write to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A provider whose api_key_env is not set is named when the catalogue is applied and when a
// replica starts, instead of surfacing later as a 502; providers with their key are not.
func TestUnsetProviderKeysAreWarnedAbout(t *testing.T) {
	t.Parallel()
	db := storetest.DatabaseURL(t)
	env := func(c *Config) {
		c.Env = func(name string) string {
			if name == "HAVE_KEY" {
				return "sk-real"
			}
			return ""
		}
	}
	e := startGateway(t, db, adminToken, env)
	doc := `{"families":[{"id":"f"}],"providers":[
	  {"id":"with-key","kind":"openai","base_url":"http://127.0.0.1:1/v1","api_key_env":"HAVE_KEY"},
	  {"id":"without-key","kind":"anthropic","base_url":"http://127.0.0.1:1","api_key_env":"MISSING_KEY"}],
	  "models":[{"id":"m","family":"f","routes":[{"endpoint_families":["chat.completions"],"provider":"without-key"}]}]}`
	resp := e.admin("POST", "/admin/v1/catalog:apply", doc)
	ws, _ := resp["warnings"].([]any)
	if len(ws) != 1 || !strings.Contains(ws[0].(string), "without-key") || !strings.Contains(ws[0].(string), "MISSING_KEY") {
		t.Fatalf("apply warnings %v, want one naming without-key and MISSING_KEY", resp["warnings"])
	}

	var logs syncBuffer
	cfg := &Config{DatabaseURL: db, HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0", AdminToken: adminToken, DrainTimeout: 5 * time.Second}
	env(cfg)
	g, err := Start(context.Background(), cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Shutdown(5 * time.Second) })
	out := logs.String()
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "MISSING_KEY") || strings.Contains(out, "HAVE_KEY") {
		t.Errorf("start-up log does not warn about exactly the unset key:\n%s", out)
	}
}
