package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/store/storetest"
	"modelgateway/front/admincli"
)

// The CLI reaches the admin API over gRPC exactly as an operator's shell would.
func TestAdminCLIAndApply(t *testing.T) {
	e := startGateway(t, storetest.DatabaseURL(t), adminToken)
	t.Setenv("GATEWAY_GRPC_ADDR", e.g.GRPCAddr)
	t.Setenv("GATEWAY_ADMIN_TOKEN", adminToken)
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
	if _, _, list := e.do("GET", "/v1/models", bearer(secret), ""); len(ids(t, list, "data", "id")) != 1 {
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

// BenchmarkCoreCall compares the front's in-process channel with a loopback gRPC socket for
// the same RPC: go test -run x -bench CoreCall .
func BenchmarkCoreCall(b *testing.B) {
	e := startGateway(b, storetest.DatabaseURL(b), adminToken)
	f := setup(b, e)
	conn, err := grpc.NewClient(e.g.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+f.wide)
	for _, c := range []struct {
		name   string
		client corev1.CoreServiceClient
	}{{"inprocess", e.g.Core}, {"loopback", corev1.NewCoreServiceClient(conn)}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := c.client.Authorize(ctx, &corev1.AuthorizeRequest{EndpointFamily: "chat.completions", Model: "a-model"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
