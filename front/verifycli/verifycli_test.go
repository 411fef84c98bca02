package verifycli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	adminv1 "modelgateway/gen/gateway/admin/v1"
)

func TestVerifyCommandCallsTheAdminRoute(t *testing.T) {
	t.Parallel()
	var gotBody map[string][]string
	var gotAuth, gotPath string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotPath = r.Header.Get("Authorization"), r.URL.Path
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &gotBody)
		if strings.Contains(string(raw), "nope") {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"message":"models: \"nope\" is not an active model","type":"service_error","code":"not_found","request_id":"r"}}`)
			return
		}
		io.WriteString(w, `{"capabilities":[{"model":"a","endpoint_family":"chat.completions","optional_parameters":["stop"],"verified_at":"2026-11-01T00:00:00Z","inconclusive":["logit_bias"]}]}`)
	}))
	defer srv.Close()

	var out bytes.Buffer
	err := Run(context.Background(), []string{"-addr", srv.URL, "-models", "a, b", "-families", "chat.completions"}, &out, "tok")
	if err != nil {
		t.Fatal(err)
	}
	if gotPath != "/admin/v1/capabilities:verify" || gotAuth != "Bearer tok" {
		t.Errorf("path %q, auth %q", gotPath, gotAuth)
	}
	if diff := cmp.Diff(map[string][]string{"models": {"a", "b"}, "endpoint_families": {"chat.completions"}}, gotBody); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
	var printed map[string]any
	if err := json.Unmarshal(out.Bytes(), &printed); err != nil || !strings.Contains(out.String(), "\n  ") {
		t.Errorf("output is not indented JSON (%v):\n%s", err, out.String())
	}

	// No filter: empty lists, which the server reads as "everything".
	if err := Run(context.Background(), []string{"-addr", srv.URL}, io.Discard, "tok"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"models": {}, "endpoint_families": {}}, gotBody); diff != "" {
		t.Errorf("unfiltered body (-want +got):\n%s", diff)
	}

	err = Run(context.Background(), []string{"-addr", srv.URL, "-models", "nope"}, io.Discard, "tok")
	if err == nil || !strings.HasPrefix(err.Error(), "not_found: ") {
		t.Errorf("error answer: got %v, want the envelope's code and message", err)
	}
	if err := Run(context.Background(), []string{"-addr", srv.URL}, io.Discard, ""); err == nil {
		t.Error("no admin token: want an error")
	}
}

// fakeAdmin answers VerifyCapabilities over gRPC with what it was asked.
type fakeAdmin struct {
	adminv1.UnimplementedAdminServiceServer
	auth string
}

func (f *fakeAdmin) VerifyCapabilities(ctx context.Context, req *adminv1.VerifyCapabilitiesRequest) (*adminv1.VerifyCapabilitiesResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	f.auth = strings.Join(md.Get("authorization"), ",")
	out := &adminv1.VerifyCapabilitiesResponse{}
	for _, m := range req.Models {
		out.Capabilities = append(out.Capabilities, &adminv1.Capability{Model: m, EndpointFamily: strings.Join(req.EndpointFamilies, "+")})
	}
	return out, nil
}

// verify takes the address flags admin takes: -http-addr (and the old -addr) for the admin
// HTTP route, its default; -grpc-addr alone for the gRPC AdminService, as `gateway admin` calls.
func TestVerifyTakesAdminsAddressFlags(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs, fake := grpc.NewServer(), &fakeAdmin{}
	adminv1.RegisterAdminServiceServer(gs, fake)
	go gs.Serve(ln)
	defer gs.Stop()
	httpCalls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpCalls++
		io.WriteString(w, `{"capabilities":[]}`)
	}))
	defer srv.Close()

	var out bytes.Buffer
	if err := Run(context.Background(), []string{"-grpc-addr", ln.Addr().String(), "-models", "a,b", "-families", "messages"}, &out, "tok"); err != nil {
		t.Fatal(err)
	}
	if fake.auth != "Bearer tok" || httpCalls != 0 {
		t.Errorf("gRPC call: auth %q, %d HTTP calls", fake.auth, httpCalls)
	}
	want := "{\n  \"capabilities\": [\n    {\n      \"model\": \"a\",\n      \"endpoint_family\": \"messages\","
	if !strings.HasPrefix(out.String(), want) {
		t.Errorf("printed:\n%s\nwant it to start with:\n%s", out.String(), want)
	}
	for _, flagName := range []string{"-http-addr", "-addr"} {
		if err := Run(context.Background(), []string{flagName, srv.URL, "-grpc-addr", ln.Addr().String()}, io.Discard, "tok"); err != nil {
			t.Fatal(err)
		}
	}
	if httpCalls != 2 {
		t.Errorf("-http-addr and -addr: %d HTTP calls, want 2", httpCalls)
	}
}
