package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/store/storetest"
)

// The gateway says when it serves (version and every listener) and when it has stopped (what
// it drained, in how long); Ctrl-C used to stop it without a line.
func TestStartAndShutdownAreLogged(t *testing.T) {
	t.Parallel()
	logs := &gatewaytest.SyncBuffer{}
	cfg := &Config{DatabaseURL: storetest.DatabaseURL(t), HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0",
		AdminHTTPAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", AdminToken: adminToken, DrainTimeout: 5 * time.Second}
	g, err := Start(context.Background(), cfg, slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Shutdown(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	lines := map[string]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		lines[rec["msg"].(string)] = rec
	}
	for msg, want := range map[string]map[string]any{
		"gateway serving":  {"version": "devel", "http": g.HTTPAddr, "grpc": g.GRPCAddr, "admin_http": g.AdminHTTPAddr, "metrics": g.MetricsAddr},
		"gateway draining": {"streams": float64(0), "drain_timeout": float64(5 * time.Second)},
		"gateway stopped":  {"streams_drained": float64(0), "streams_cut": float64(0)},
	} {
		rec, ok := lines[msg]
		if !ok {
			t.Errorf("no %q line in:\n%s", msg, logs.String())
			continue
		}
		for k, v := range want {
			if rec[k] != v || v == "" {
				t.Errorf("%q: %s = %v, want %v", msg, k, rec[k], v)
			}
		}
	}
	if took, _ := lines["gateway stopped"]["took"].(string); !strings.HasSuffix(took, "s") {
		t.Errorf("the stopped line's took = %q, want a duration", took)
	}
}
