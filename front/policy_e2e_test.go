package front_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"modelgateway/core/gatewaytest"
)

func TestDiscoveryIsFilteredByKeyPolicy(t *testing.T) {
	t.Parallel()
	e := gatewaytest.Start(t, gatewaytest.Options{})
	f := gatewaytest.Setup(t, e)

	// Spec 2.1: family order of the catalogue (zeta before alpha), then priority, then id;
	// the inactive model never appears.
	status, _, list := e.Do("GET", "/v1/models", gatewaytest.Bearer(f.Wide), "")
	if status != 200 {
		t.Fatalf("wide list: %d %v", status, list)
	}
	if diff := cmp.Diff([]string{"gem", "gem-embed", "org/z-model:v1", "a-model", "b-model"}, gatewaytest.IDs(t, list, "data", "id")); diff != "" {
		t.Errorf("wide key model order (-want +got):\n%s", diff)
	}
	if list["object"] != "list" {
		t.Errorf("object = %v, want list", list["object"])
	}
	first := list["data"].([]any)[0].(map[string]any)
	if first["object"] != "model" || first["owned_by"] != "g" {
		t.Errorf("model object = %v", first)
	}
	if _, ok := first["created"].(float64); !ok {
		t.Errorf("created must be a JSON number, got %T", first["created"])
	}
	// One list serves the Anthropic SDK too: type, display_name, created_at beside the spec's
	// fields, the page fields on the list; the output limit where clients look for it.
	created := time.Unix(int64(first["created"].(float64)), 0).UTC().Format(time.RFC3339)
	if first["type"] != "model" || first["display_name"] != "Gem Pro" || first["created_at"] != created {
		t.Errorf("Anthropic fields of %v (created_at want %s)", first, created)
	}
	if first["max_tokens"] != float64(8192) || !cmp.Equal(first["top_provider"], map[string]any{"max_completion_tokens": float64(8192)}) {
		t.Errorf("output limit of gem: max_tokens %v, top_provider %v", first["max_tokens"], first["top_provider"])
	}
	last := list["data"].([]any)[4].(map[string]any)
	if _, has := last["max_tokens"]; has || !cmp.Equal(last["top_provider"], map[string]any{}) {
		t.Errorf("a model without an explicit limit shows one: %v", last)
	}
	if list["has_more"] != false || list["first_id"] != "gem" || list["last_id"] != "b-model" {
		t.Errorf("page fields: has_more %v first_id %v last_id %v", list["has_more"], list["first_id"], list["last_id"])
	}

	// The narrow key sees only its models on its families: b-model is not granted,
	// gem-embed is served only on content.embed which the key lacks.
	_, _, list = e.Do("GET", "/v1/models", gatewaytest.Bearer(f.Narrow), "")
	if diff := cmp.Diff([]string{"gem", "org/z-model:v1", "a-model"}, gatewaytest.IDs(t, list, "data", "id")); diff != "" {
		t.Errorf("narrow key models (-want +got):\n%s", diff)
	}

	// Single lookups: ids with "/" and ":"; invisible and unknown models are model_not_found.
	status, _, m := e.Do("GET", "/v1/models/org/z-model:v1", gatewaytest.Bearer(f.Narrow), "")
	if status != 200 || m["id"] != "org/z-model:v1" {
		t.Errorf("GET model with / and : = %d %v", status, m)
	}
	for _, id := range []string{"b-model", "retired", "nope"} {
		status, _, m = e.Do("GET", "/v1/models/"+id, gatewaytest.Bearer(f.Narrow), "")
		if status != 404 || gatewaytest.Code(m) != "model_not_found" {
			t.Errorf("GET /v1/models/%s = %d %v, want 404 model_not_found", id, status, m)
		}
	}

	// Two keys of one profile see one balance.
	_, _, b1 := e.Do("GET", "/v1/balance", gatewaytest.Bearer(f.Wide), "")
	_, _, b2 := e.Do("GET", "/v1/balance", gatewaytest.Bearer(f.Narrow), "")
	if b1["balance"] != "100.000000001" || b1["currency"] != "RUB" || !cmp.Equal(b1, b2) {
		t.Errorf("balances differ or wrong: %v vs %v", b1, b2)
	}
}

func TestContentGenerationModelForms(t *testing.T) {
	t.Parallel()
	e := gatewaytest.Start(t, gatewaytest.Options{})
	f := gatewaytest.Setup(t, e)

	status, _, list := e.Do("GET", "/v1beta/models", map[string]string{"x-goog-api-key": f.Wide}, "")
	if status != 200 {
		t.Fatalf("v1beta list: %d %v", status, list)
	}
	want := []any{
		map[string]any{"name": "models/gem", "baseModelId": "gem", "displayName": "Gem Pro",
			"supportedGenerationMethods": []any{"generateContent", "streamGenerateContent", "countTokens"}, "outputTokenLimit": float64(8192)},
		map[string]any{"name": "models/gem-embed", "baseModelId": "gem-embed", "displayName": "gem-embed",
			"supportedGenerationMethods": []any{"embedContent", "batchEmbedContents"}},
	}
	if diff := cmp.Diff(want, list["models"]); diff != "" {
		t.Errorf("v1beta models (-want +got):\n%s", diff)
	}

	// Methods follow the key's content families: the narrow key has content.generate only.
	status, _, m := e.Do("GET", "/v1beta/models/gem", map[string]string{"x-gen-api-key": f.Narrow}, "")
	if status != 200 || !cmp.Equal(m["supportedGenerationMethods"], []any{"generateContent", "streamGenerateContent"}) {
		t.Errorf("narrow v1beta model = %d %v", status, m)
	}

	// Paging with pageSize/pageToken.
	_, _, page := e.Do("GET", "/v1beta/models?pageSize=1", map[string]string{"x-goog-api-key": f.Wide}, "")
	if len(page["models"].([]any)) != 1 || page["nextPageToken"] == "" {
		t.Fatalf("page 1 = %v", page)
	}
	_, _, page2 := e.Do("GET", "/v1beta/models?pageSize=1&pageToken="+page["nextPageToken"].(string), map[string]string{"x-goog-api-key": f.Wide}, "")
	if diff := cmp.Diff([]string{"models/gem-embed"}, gatewaytest.IDs(t, page2, "models", "name")); diff != "" {
		t.Errorf("page 2 (-want +got):\n%s", diff)
	}

	for _, path := range []string{"/v1beta/chat-compat/models", "/v1beta/openai/models"} {
		status, _, list = e.Do("GET", path+"?key="+f.Wide, nil, "")
		if status != 200 || list["object"] != "list" {
			t.Fatalf("%s: %d %v", path, status, list)
		}
		if diff := cmp.Diff([]string{"gem", "gem-embed"}, gatewaytest.IDs(t, list, "data", "id")); diff != "" {
			t.Errorf("%s (-want +got):\n%s", path, diff)
		}
	}
}

func TestKeyMechanismsPerRoute(t *testing.T) {
	t.Parallel()
	e := gatewaytest.Start(t, gatewaytest.Options{})
	f := gatewaytest.Setup(t, e)
	cases := []struct {
		name   string
		path   string
		header map[string]string
		want   int
	}{
		{"bearer everywhere", "/v1/models", map[string]string{"Authorization": "Bearer " + f.Wide}, 200},
		{"x-api-key everywhere", "/v1/models", map[string]string{"x-api-key": f.Wide}, 200},
		{"api-key everywhere", "/v1/models", map[string]string{"api-key": f.Wide}, 200},
		{"x-gen-api-key not on /v1", "/v1/models", map[string]string{"x-gen-api-key": f.Wide}, 401},
		{"x-goog-api-key not on /v1", "/v1/models", map[string]string{"x-goog-api-key": f.Wide}, 401},
		{"query key not on /v1", "/v1/models?key=" + f.Wide, nil, 401},
		{"x-gen-api-key on /v1beta", "/v1beta/models", map[string]string{"x-gen-api-key": f.Wide}, 200},
		{"x-goog-api-key on /v1beta", "/v1beta/models", map[string]string{"x-goog-api-key": f.Wide}, 200},
		{"query key on /v1beta", "/v1beta/models?key=" + f.Wide, nil, 200},
		{"bearer on /v1beta", "/v1beta/models", map[string]string{"Authorization": "Bearer " + f.Wide}, 200},
		{"unknown key", "/v1/models", map[string]string{"Authorization": "Bearer sk-gw-nope"}, 401},
		{"no key", "/v1/balance", nil, 401},
	}
	for _, tc := range cases {
		status, _, body := e.Do("GET", tc.path, tc.header, "")
		if status != tc.want {
			t.Errorf("%s: status %d, want %d (%v)", tc.name, status, tc.want, body)
		}
		if tc.want == 401 && gatewaytest.Code(body) != "invalid_key" {
			t.Errorf("%s: code %q, want invalid_key", tc.name, gatewaytest.Code(body))
		}
	}
}

func TestErrorEnvelopeAndRequestIDs(t *testing.T) {
	t.Parallel()
	e := gatewaytest.Start(t, gatewaytest.Options{})
	f := gatewaytest.Setup(t, e)
	cases := []struct {
		name, method, path string
		headers            map[string]string
		status             int
		code               string
	}{
		{"wrong key echoes the request id", "GET", "/v1/models", map[string]string{"Authorization": "Bearer bad", "X-Request-Id": "req-123"}, 401, "invalid_key"},
		{"unknown path", "GET", "/v1/nothing-here", map[string]string{"X-Request-Id": "req-404"}, 404, "not_found"},
		{"wrong method on a discovery route", "DELETE", "/v1/models", map[string]string{"X-Request-Id": "req-405"}, 405, "method_not_allowed"},
		{"unknown model through grpc-gateway", "GET", "/v1/models/missing", map[string]string{"Authorization": "Bearer " + f.Wide, "X-Request-Id": "req-mnf"}, 404, "model_not_found"},
		{"admin without token", "GET", "/admin/v1/profiles/" + f.ProfileID, map[string]string{"X-Request-Id": "req-adm"}, 401, "invalid_admin_token"},
		{"admin unknown profile", "GET", "/admin/v1/profiles/" + uuid.NewString(), map[string]string{"Authorization": "Bearer " + gatewaytest.AdminToken, "X-Request-Id": "req-adm2"}, 404, "not_found"},
	}
	for _, tc := range cases {
		status, hdr, body := e.Do(tc.method, tc.path, tc.headers, "")
		if status != tc.status || gatewaytest.Code(body) != tc.code {
			t.Errorf("%s: %d %v, want %d %s", tc.name, status, body, tc.status, tc.code)
			continue
		}
		errObj := body["error"].(map[string]any)
		if errObj["type"] != "service_error" || errObj["message"] == "" {
			t.Errorf("%s: envelope %v", tc.name, errObj)
		}
		want := tc.headers["X-Request-Id"]
		if errObj["request_id"] != want || hdr.Get("X-Request-Id") != want {
			t.Errorf("%s: request id body %v header %q, want %q", tc.name, errObj["request_id"], hdr.Get("X-Request-Id"), want)
		}
	}

	// Without x-request-id the gateway makes a sortable one and returns it in both places.
	_, hdr, body := e.Do("GET", "/v1/models", map[string]string{"Authorization": "Bearer bad"}, "")
	id := hdr.Get("X-Request-Id")
	if !gatewayID.MatchString(id) || body["error"].(map[string]any)["request_id"] != id {
		t.Errorf("generated request id %q, envelope %v", id, body)
	}
	_, hdr, _ = e.Do("GET", "/v1/models", gatewaytest.Bearer(f.Wide), "")
	if !gatewayID.MatchString(hdr.Get("X-Request-Id")) {
		t.Errorf("success without x-request-id got %q", hdr.Get("X-Request-Id"))
	}
}

func TestApplyCatalogAcceptsYAMLOverHTTP(t *testing.T) {
	t.Parallel()
	e := gatewaytest.Start(t, gatewaytest.Options{})
	doc := "families: [{id: y}]\nproviders: [{id: p, kind: simulator, base_url: 'http://127.0.0.1:1'}]\n" +
		"models:\n  - id: yaml-model\n    family: y\n    routes: [{endpoint_families: [chat.completions], provider: p}]\n" +
		"    prices: [{endpoint_families: [chat.completions], billing_mode: per_token, input: 123456789012345.123456789, output: 2}]\n"
	status, _, body := e.Do("POST", "/admin/v1/catalog:apply", map[string]string{"Authorization": "Bearer " + gatewaytest.AdminToken, "Content-Type": "application/yaml"}, doc)
	if status != 200 || body["models"] != float64(1) {
		t.Fatalf("YAML apply = %d %v", status, body)
	}
	var input string
	if err := e.Pool().QueryRow(context.Background(), `SELECT input::text FROM prices WHERE model_id = 'yaml-model'`).Scan(&input); err != nil {
		t.Fatal(err)
	}
	if input != "123456789012345.123456789" {
		t.Errorf("stored amount %s lost precision", input)
	}
}

// gatewayID is the form of the gateway's own request ids: gw- and the 32 hex digits of a
// uuid v7 (version nibble 7, variant 10xx), which sort by time as text.
var gatewayID = regexp.MustCompile(`^gw-[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}$`)
