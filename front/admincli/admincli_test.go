package admincli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	adminv1 "modelgateway/gen/gateway/admin/v1"
)

func TestEveryAdminRPCIsAVerb(t *testing.T) {
	t.Parallel()
	methods := adminMethods()
	sd := adminv1.File_gateway_admin_v1_admin_proto.Services().ByName("AdminService")
	if len(methods) != sd.Methods().Len() {
		t.Errorf("%d verbs for %d RPCs", len(methods), sd.Methods().Len())
	}
	for verb, rpc := range map[string]string{"create-key": "CreateKey", "apply-catalog": "ApplyCatalog", "get-profile": "GetProfile"} {
		if md, ok := methods[verb]; !ok || string(md.Name()) != rpc {
			t.Errorf("verb %s is %v, want %s", verb, md, rpc)
		}
	}
	var out bytes.Buffer
	if err := Admin(context.Background(), []string{"help"}, &out); err != nil || !strings.Contains(out.String(), "\n  create-key\n") {
		t.Errorf("help printed %q (%v)", out.String(), err)
	}
	if err := Admin(context.Background(), []string{"no-such-verb"}, &out); err == nil || !strings.Contains(err.Error(), "no-such-verb") {
		t.Errorf("unknown verb: %v", err)
	}
}

func TestFlagsAndJSONBuildTheRequest(t *testing.T) {
	t.Parallel()
	desc := (&adminv1.CreateKeyRequest{}).ProtoReflect().Descriptor()
	tests := []struct {
		name string
		args []string
		want *adminv1.CreateKeyRequest
		err  string
	}{
		{"flags fill fields, lists split on commas", []string{"--profile_id=p", "--allowed-endpoints=chat.completions,messages", "--max_concurrent_requests=3"},
			&adminv1.CreateKeyRequest{ProfileId: "p", AllowedEndpoints: []string{"chat.completions", "messages"}, MaxConcurrentRequests: 3}, ""},
		{"a JSON object and flags combine", []string{`{"name":"k","allowed_models":["*"]}`, "--profile_id=p"},
			&adminv1.CreateKeyRequest{ProfileId: "p", Name: "k", AllowedModels: []string{"*"}}, ""},
		{"an empty list flag is an empty list", []string{"--allowed_models="}, &adminv1.CreateKeyRequest{}, ""},
		{"an unknown field is named", []string{"--colour=red"}, nil, "colour"},
		{"a flag without a value says how to give one", []string{"--name"}, nil, "--name=value"},
		{"a bare word is refused", []string{"name"}, nil, `unexpected argument "name"`},
		{"a value of the wrong type is refused", []string{"--max_concurrent_requests=many"}, nil, "request:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := buildRequest(desc, tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || !proto.Equal(got, tc.want) {
				t.Errorf("buildRequest = %v (%v), want %v", got, err, tc.want)
			}
		})
	}
}

func TestApplyRefusesWhatIsNotADocumentBeforeCalling(t *testing.T) {
	t.Setenv("GATEWAY_ADMIN_TOKEN", "t")
	t.Setenv("GATEWAY_GRPC_ADDR", "127.0.0.1:1") // nothing listens: a call would fail differently
	dir := t.TempDir()
	for name, body := range map[string]string{"list.yaml": "- a\n- b\n", "broken.yaml": "a: [1,\n"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		err := Apply(context.Background(), []string{"-f", path})
		if err == nil || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "unavailable") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := Apply(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "-f FILE") {
		t.Errorf("no file: %v", err)
	}
}

func TestBaseURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"127.0.0.1:8080":      "http://127.0.0.1:8080",
		":8080":               "http://127.0.0.1:8080",
		"https://gw.example/": "https://gw.example",
		"http://10.0.0.1:80":  "http://10.0.0.1:80",
	} {
		if got := BaseURL(in); got != want {
			t.Errorf("BaseURL(%q) = %q, want %q", in, got, want)
		}
	}
}
