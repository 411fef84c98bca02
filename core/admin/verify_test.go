package admin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	adminv1 "modelgateway/gen/gateway/admin/v1"
	catalogv1 "modelgateway/gen/gateway/catalog/v1"

	"modelgateway/core/catalog"
	"modelgateway/core/provider"
	"modelgateway/core/provider/anthropic"
	"modelgateway/core/provider/openai"
	"modelgateway/core/rpc"
	"modelgateway/core/simulator"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/store/storetest"
	"modelgateway/core/verify"
	"modelgateway/core/wire/apierror"
)

// verifyCatalog routes chat.completions to an OpenAI-style upstream and messages to an
// Anthropic-style one; the messages pair already has a declared capability.
const verifyCatalog = `
currency: RUB
families: [{id: fam}]
providers:
  - {id: oa, kind: openai, base_url: "%s/v1", api_key_env: OA_KEY}
  - {id: an, kind: anthropic, base_url: "%s", api_key_env: AN_KEY}
models:
  - id: m
    display_name: M
    family: fam
    owned_by: x
    routes:
      - {endpoint_families: [chat.completions], provider: oa, upstream_model: up-m}
      - {endpoint_families: [messages], provider: an}
    prices: [{endpoint_families: [chat.completions, messages], billing_mode: per_token, input: "1", output: "1"}]
    capabilities:
      - {endpoint_family: messages, optional_parameters: [temperature], verified_at: "2026-01-01T00:00:00Z"}
`

type verifyEnv struct {
	admin   *Server
	holder  *snapshot.Holder
	catalog *rpc.CatalogServer
}

// newVerifyEnv starts the upstreams: OpenAI-style rejects top_p and logprobs with a 400,
// accepts the rest (the simulator answers); the Anthropic-style one is down (503).
func newVerifyEnv(t *testing.T) *verifyEnv {
	t.Helper()
	ctx := context.Background()
	sim := simulator.New(simulator.Options{Words: 3})
	oa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		for _, f := range []string{"top_p", "logprobs"} {
			if gjson.GetBytes(body, f).Exists() {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"error":{"message":"Unrecognized request argument supplied: %s","type":"invalid_request_error"}}`, f)
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(oa.Close)
	an := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	}))
	t.Cleanup(an.Close)

	st, err := store.Open(ctx, storetest.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	doc, err := catalog.Parse(fmt.Appendf(nil, verifyCatalog, oa.URL, an.URL))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyCatalog(ctx, doc); err != nil {
		t.Fatal(err)
	}
	holder, err := snapshot.NewHolder(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	prober := &verify.Prober{
		Adapters:   map[string]provider.Adapter{"openai": openai.Adapter{}, "anthropic": anthropic.Adapter{}},
		Env:        func(string) string { return "" },
		RetryDelay: time.Millisecond,
	}
	return &verifyEnv{
		admin:   &Server{Store: st, Snapshots: holder, Verifier: prober},
		holder:  holder,
		catalog: &rpc.CatalogServer{Snapshots: holder},
	}
}

var chatSupported = []string{"temperature", "max_tokens", "frequency_penalty", "presence_penalty", "stop", "seed", "n", "stream", "response_format", "tools", "tool_choice", "user"}

func TestVerifyCapabilitiesRecordsAndIsInForceAtOnce(t *testing.T) {
	t.Parallel()
	env := newVerifyEnv(t)
	ctx := context.Background()
	before := time.Now()
	resp, err := env.admin.VerifyCapabilities(ctx, &adminv1.VerifyCapabilitiesRequest{Models: []string{"m"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetCapabilities()) != 2 {
		t.Fatalf("capabilities: %v", resp.GetCapabilities())
	}
	chat, msgs := resp.GetCapabilities()[0], resp.GetCapabilities()[1]
	if chat.GetEndpointFamily() != "chat.completions" || msgs.GetEndpointFamily() != "messages" {
		t.Fatalf("families: %s, %s", chat.GetEndpointFamily(), msgs.GetEndpointFamily())
	}
	if diff := cmp.Diff(chatSupported, chat.GetOptionalParameters()); diff != "" {
		t.Errorf("chat optional_parameters (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"logit_bias"}, chat.GetInconclusive()); diff != "" {
		t.Errorf("chat inconclusive (-want +got):\n%s", diff)
	}
	if chat.GetVerifiedAt() == nil || chat.GetVerifiedAt().AsTime().Before(before.Add(-time.Second)) {
		t.Errorf("chat verified_at = %v, want now", chat.GetVerifiedAt())
	}
	// The messages upstream is down: nothing verified, nothing recorded.
	if msgs.GetVerifiedAt() != nil || len(msgs.GetOptionalParameters()) != 0 || len(msgs.GetInconclusive()) != len(verify.Parameters) {
		t.Errorf("messages = %v, want every parameter inconclusive and no verified_at", msgs)
	}

	// In force on this replica as the call answers: the snapshot...
	m := env.holder.Current().Model("m")
	if diff := cmp.Diff(chatSupported, m.Capabilities["chat.completions"].OptionalParameters); diff != "" {
		t.Errorf("snapshot capability (-want +got):\n%s", diff)
	}
	if got := m.Capabilities["messages"].OptionalParameters; !cmp.Equal(got, []string{"temperature"}) {
		t.Errorf("the declared messages capability changed to %v after a failed baseline", got)
	}
	// (core's parameter check reads this list: core/rpc TestCheckParametersReadsTheVerifiedList)
	// ...and the public catalogue.
	cat, err := env.catalog.GetCatalog(ctx, &catalogv1.GetCatalogRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var entry *catalogv1.Capability
	for _, c := range cat.GetFamilies()[0].GetModels()[0].GetCapabilities() {
		if c.GetEndpointFamily() == "chat.completions" {
			entry = c
		}
	}
	if entry == nil || !cmp.Equal(entry.GetOptionalParameters(), chatSupported) || !entry.GetVerifiedAt().AsTime().Equal(chat.GetVerifiedAt().AsTime()) {
		t.Errorf("catalogue entry = %v, want the verified list", entry)
	}
}

func TestVerifyCapabilitiesRefusals(t *testing.T) {
	t.Parallel()
	env := newVerifyEnv(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		admin    *Server
		req      *adminv1.VerifyCapabilitiesRequest
		wantCode string
	}{
		{"a replica without a verifier says so", &Server{Store: env.admin.Store, Snapshots: env.holder}, &adminv1.VerifyCapabilitiesRequest{}, apierror.Unavailable},
		{"an unknown model is not found", env.admin, &adminv1.VerifyCapabilitiesRequest{Models: []string{"nope"}}, apierror.NotFound},
		{"a family without optional parameters is refused", env.admin, &adminv1.VerifyCapabilitiesRequest{EndpointFamilies: []string{"embeddings"}}, apierror.InvalidRequest},
	} {
		_, err := tc.admin.VerifyCapabilities(ctx, tc.req)
		var ae *apierror.Error
		if !errors.As(err, &ae) || ae.Code != tc.wantCode {
			t.Errorf("%s: err %v, want %s", tc.name, err, tc.wantCode)
		}
	}
	if _, ok := env.holder.Current().Model("m").Capabilities["chat.completions"]; ok {
		t.Error("a refused call recorded a capability")
	}
}
