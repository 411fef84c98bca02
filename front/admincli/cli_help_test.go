package admincli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "modelgateway/gen/gateway/admin/v1"
)

// `gateway admin --help` lists the verbs; `gateway admin VERB --help` the verb's fields (it
// used to answer "flag --help: use --help=value"). Both end as -h does: flag.ErrHelp, exit 0.
func TestAdminHelpListsVerbsAndFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"usage: gateway admin", "-http-addr", "\n  create-key\n"}},
		{[]string{"-h"}, []string{"\n  list-usage\n"}},
		{[]string{"create-key", "--help"}, []string{"CreateKeyRequest", "  --profile_id=STRING\n", "  --allowed_endpoints=STRING,...\n", "  --max_concurrent_requests=INT32\n", "  --max_tokens_per_minute=INT32\n",
			"  --budget=JSON (Budget)\n", "  --expire_time=RFC3339-TIME\n"}},
		{[]string{"update-key", "-h"}, []string{"  --key=JSON (Key)\n"}},
		{[]string{"list-incidents", "help"}, []string{"ListIncidentsRequest"}},
		{[]string{"list-usage", "--help"}, []string{"ListUsageRequest", "  --key_id=STRING\n", "  --start_time=RFC3339-TIME\n", "  --end_time=RFC3339-TIME\n", "  --page_token=STRING\n"}},
		{[]string{"get-usage-summary", "--help"}, []string{"GetUsageSummaryRequest", "GetUsageSummaryResponse", "  --group_by=STRING,...\n", "  --start_time=RFC3339-TIME\n", "  --key_id=STRING\n"}},
	}
	for _, tc := range tests {
		var out bytes.Buffer
		err := Admin(context.Background(), tc.args, &out)
		if !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%v: err = %v, want flag.ErrHelp", tc.args, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out.String())
			}
		}
	}
}

// The output is what jq prints: two-space indent, `"key": value` with one space (protojson's
// Multiline output puts two spaces there on purpose, varying between builds).
func TestPrintJSONIsJQShaped(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	p := &adminv1.Profile{Id: "p1", DisplayName: "Ann", Balance: "1.5", CreateTime: &timestamppb.Timestamp{Seconds: 1790000000}}
	if err := printJSON(&out, p); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "profile.json")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("printed:\n%s\nwant (%s):\n%s", out.String(), golden, want)
	}
	if strings.Contains(out.String(), ":  ") {
		t.Errorf("two spaces after a colon:\n%s", out.String())
	}
}

// -http-addr alone sends the call to the RPC's admin HTTP route: path parameters in the path,
// the body the rule names, the other fields of a GET in the query; -grpc-addr wins over it.
func TestAdminOverHTTPRoute(t *testing.T) {
	t.Setenv("GATEWAY_ADMIN_TOKEN", "tok")
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.RequestURI()+" "+string(body)+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		if strings.Contains(r.URL.Path, "missing") {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"message":"no profile \"missing\"","type":"invalid_request_error","code":"not_found"}}`)
			return
		}
		io.WriteString(w, `{"id":"p1","display_name":"Ann","unknown_later_field":1}`)
	}))
	defer srv.Close()
	calls := []struct {
		args []string
		want string
	}{
		{[]string{"get-profile", "--id=p 1"}, "GET /admin/v1/profiles/p%201  Bearer tok"},
		{[]string{"list-usage", "--id=p1", "--page_size=2"}, "GET /admin/v1/profiles/p1/usage?page_size=2  Bearer tok"},
		{[]string{"get-usage-summary", "--id=p1", "--group_by=key,day", "--start_time=2026-11-01T00:00:00Z"},
			"GET /admin/v1/profiles/p1/usage:summary?group_by=key&group_by=day&start_time=2026-11-01T00%3A00%3A00Z  Bearer tok"},
		{[]string{"create-key", "--profile_id=p1", "--allowed_models=a,b"}, `POST /admin/v1/profiles/p1/keys {"allowed_models":["a","b"]} Bearer tok`},
		{[]string{"update-key", `--key={"id":"k1","name":"n"}`}, `PATCH /admin/v1/keys/k1 {"id":"k1","name":"n"} Bearer tok`},
		{[]string{"create-key", "--profile_id=p1", `--budget={"amount":"5","period":"DAY"}`, "--expire_time=2027-01-01T00:00:00Z"},
			`POST /admin/v1/profiles/p1/keys {"budget":{"amount":"5","period":"DAY"},"expire_time":"2027-01-01T00:00:00Z"} Bearer tok`},
		{[]string{"update-key", `--key={"id":"k1","budget":{"amount":"0"}}`}, `PATCH /admin/v1/keys/k1 {"id":"k1","budget":{"amount":"0"}} Bearer tok`},
	}
	for _, c := range calls {
		var out bytes.Buffer
		if err := Admin(context.Background(), append([]string{"-http-addr", srv.URL}, c.args...), &out); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		mu.Lock()
		last := got[len(got)-1]
		mu.Unlock()
		if last != c.want {
			t.Errorf("%v sent\n%s\nwant\n%s", c.args, last, c.want)
		}
		if !json.Valid(out.Bytes()) || !strings.Contains(out.String(), "\n  \"") {
			t.Errorf("%v printed %s", c.args, out.String())
		}
	}
	err := Admin(context.Background(), []string{"-http-addr", srv.URL, "get-profile", "--id=missing"}, io.Discard)
	if err == nil || err.Error() != `not_found: no profile "missing"` {
		t.Errorf("error answer: %v", err)
	}
	// Both given: the command's own transport, gRPC (nothing listens there).
	n := len(got)
	err = Admin(context.Background(), []string{"-http-addr", srv.URL, "-grpc-addr", "127.0.0.1:1", "get-profile", "--id=p1"}, io.Discard)
	if err == nil || len(got) != n {
		t.Errorf("with -grpc-addr too: err %v, %d HTTP calls", err, len(got)-n)
	}
}
