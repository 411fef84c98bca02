package admincli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"modelgateway/core/gatewaytest"
	"modelgateway/front/admincli"
)

// TestMain: the package's end-to-end tests run the gateway binary on a throwaway PostgreSQL.
func TestMain(m *testing.M) { gatewaytest.Main(m) }

// The CLI reaches the admin API over gRPC exactly as an operator's shell would.
func TestAdminCLIAndApply(t *testing.T) {
	e := gatewaytest.Start(t, gatewaytest.Options{})
	t.Setenv("GATEWAY_GRPC_ADDR", e.GRPCAddr)
	t.Setenv("GATEWAY_ADMIN_TOKEN", gatewaytest.AdminToken)
	ctx := context.Background()

	doc := filepath.Join(t.TempDir(), "catalog.yaml")
	yaml := strings.Join([]string{
		"families: [{id: f}]",
		"providers: [{id: p, kind: simulator, base_url: 'http://127.0.0.1:1'}]",
		"models:",
		"  - {id: cli-model, family: f, routes: [{endpoint_families: [chat.completions], provider: p}],",
		"     prices: [{endpoint_families: [chat.completions], billing_mode: per_token, input: 0.000000001, output: 2}]}",
	}, "\n")
	if err := os.WriteFile(doc, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := admincli.Apply(ctx, []string{"-f", doc}); err != nil {
		t.Fatalf("apply: %v", err)
	}
	var out bytes.Buffer
	if err := admincli.Admin(ctx, []string{"create-profile", "--display_name=Cli", "--external_ref=cli-1"}, &out); err != nil {
		t.Fatalf("create-profile: %v", err)
	}
	var p map[string]any
	if err := json.Unmarshal(out.Bytes(), &p); err != nil || p["display_name"] != "Cli" || p["balance"] != "0" {
		t.Fatalf("create-profile printed %q (%v)", out.String(), err)
	}
	out.Reset()
	if err := admincli.Admin(ctx, []string{"create-key", "--profile_id=" + p["id"].(string), "--allowed_endpoints=chat.completions", "--allowed_models=cli-model"}, &out); err != nil {
		t.Fatalf("create-key: %v", err)
	}
	var k map[string]any
	_ = json.Unmarshal(out.Bytes(), &k)
	secret, _ := k["secret"].(string)
	if _, _, list := e.Do("GET", "/v1/models", gatewaytest.Bearer(secret), ""); len(gatewaytest.IDs(t, list, "data", "id")) != 1 {
		t.Errorf("key made by the CLI sees %v", list)
	}
	// Errors carry the spec code; unknown verbs and fields are named.
	err := admincli.Admin(ctx, []string{"get-profile", "--id=not-a-uuid"}, &out)
	if err == nil || !strings.Contains(err.Error(), "invalid_request_error") {
		t.Errorf("bad id: %v", err)
	}
	if err := admincli.Admin(ctx, []string{"create-key", "--colour=red"}, &out); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Errorf("unknown field: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	_ = os.WriteFile(bad, []byte("providers: [{id: p, kind: nope, base_url: 'http://x'}]"), 0o600)
	if err := admincli.Apply(ctx, []string{"-f", bad}); err == nil || !strings.Contains(err.Error(), "providers[0].kind") {
		t.Errorf("bad document: %v", err)
	}
}
