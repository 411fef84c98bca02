package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"modelgateway/core/provider"
	"modelgateway/core/provider/openai"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
)

// The warning that an upstream failed and the next route is tried names the request, as every
// line about a request does (it had no request id).
func TestFallbackWarningCarriesTheRequestID(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	snap := &snapshot.Snapshot{Providers: map[string]*store.Provider{
		"first": {ID: "first", Kind: "openai"}, "second": {ID: "second", Kind: "openai"},
	}}
	m := &snapshot.Model{Model: store.Model{ID: "m"}, Routes: []store.Route{
		{ProviderID: "first", EndpointFamilies: []string{"chat.completions"}},
		{ProviderID: "second", EndpointFamilies: []string{"chat.completions"}, Position: 1, Priority: 1},
	}}
	b := &billed{
		s:   &CoreServer{Deps: &Deps{Adapters: map[string]provider.Adapter{"openai": openai.Adapter{}}, Log: slog.New(slog.NewJSONHandler(&logs, nil))}},
		ctx: context.Background(), snap: snap, m: m,
		out: Outcome{RequestID: "req-fallback-1", EndpointFamily: "chat.completions"},
	}
	calls := 0
	got, _, err := firstAnswer(b, func() bool { return true }, func(_ provider.Adapter, up provider.Upstream) (string, error) {
		calls++
		if calls == 1 {
			return "", &provider.Error{Message: "the upstream could not be reached", Retryable: true}
		}
		return "answer", nil
	})
	if err != nil || got != "answer" || calls != 2 {
		t.Fatalf("firstAnswer = %q, %v after %d calls; want the second route's answer", got, err, calls)
	}
	var line map[string]any
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
		t.Fatalf("one JSON line expected, got %q: %v", logs.String(), err)
	}
	if !strings.Contains(line["msg"].(string), "next route") || line["request_id"] != "req-fallback-1" || line["provider"] != "first" {
		t.Errorf("fallback warning %v: want the request id and the failed provider", line)
	}
}
