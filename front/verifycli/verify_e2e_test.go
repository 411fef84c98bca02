package verifycli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/simulator"
	"modelgateway/front/verifycli"
)

// TestMain: the package's end-to-end tests run the gateway binary on a throwaway PostgreSQL.
func TestMain(m *testing.M) { gatewaytest.Main(m) }

// End to end: `gateway verify` over the admin HTTP route records what the upstream accepts,
// and from that answer on the catalogue shows it and client requests are checked against it.
func TestVerifiedCapabilitiesAreInForce(t *testing.T) {
	t.Parallel()
	sim := simulator.New(simulator.Options{Words: 3})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	defer up.Close()
	e := gatewaytest.Start(t, gatewaytest.Options{})
	e.Admin("POST", "/admin/v1/catalog:apply", `{"currency":"RUB","families":[{"id":"f"}],
		"providers":[{"id":"oa","kind":"openai","base_url":"`+up.URL+`/v1","api_key_env":"VERIFY_TEST_KEY"}],
		"models":[{"id":"vm","display_name":"VM","family":"f","owned_by":"x",
			"routes":[{"endpoint_families":["chat.completions"],"provider":"oa"}],
			"prices":[{"endpoint_families":["chat.completions"],"billing_mode":"per_token","input":"1","output":"1"}]}]}`)
	p := e.Admin("POST", "/admin/v1/profiles", `{"display_name":"V","external_ref":"tg:`+uuid.NewString()+`"}`)
	pid := p["id"].(string)
	e.Admin("POST", "/admin/v1/profiles/"+pid+":credit", `{"amount":"100","reason":"t","idempotency_key":"v1"}`)
	key := e.Admin("POST", "/admin/v1/profiles/"+pid+"/keys", `{"name":"k","allowed_endpoints":["*"],"allowed_models":["*"]}`)["secret"].(string)
	chat := func(param string) (int, map[string]any) {
		status, _, body := e.Do("POST", "/v1/chat/completions", gatewaytest.Bearer(key), `{"model":"vm","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":5,`+param+`}`)
		return status, body
	}

	var out bytes.Buffer
	if err := verifycli.Run(context.Background(), []string{"-addr", e.Base, "-models", "vm"}, &out, gatewaytest.AdminToken); err != nil {
		t.Fatal(err)
	}
	want := []string{"temperature", "max_tokens", "frequency_penalty", "presence_penalty", "stop", "seed", "n", "stream", "response_format", "tools", "tool_choice", "user"}
	res := gjson.GetBytes(out.Bytes(), "capabilities.0")
	var got []string
	for _, v := range res.Get("optional_parameters").Array() {
		got = append(got, v.String())
	}
	if diff := cmp.Diff(want, got); diff != "" || res.Get("verified_at").String() == "" {
		t.Errorf("verify output (-want +got):\n%s\n%s", diff, out.String())
	}

	_, _, cat := e.Do("GET", "/v1/catalog", nil, "")
	caps, _ := json.Marshal(cat)
	if entry := gjson.GetBytes(caps, `families.0.models.0.capabilities.#(endpoint_family=="chat.completions")`); len(entry.Get("optional_parameters").Array()) != len(want) {
		t.Errorf("catalogue capability = %s", entry.Raw)
	}
	if status, body := chat(`"top_p":0.5`); status != http.StatusBadRequest || gatewaytest.Code(body) != "invalid_request_error" {
		t.Errorf("top_p after verification = %d %v, want invalid_request_error", status, body)
	}
	if status, body := chat(`"temperature":0.5`); status != http.StatusOK {
		t.Errorf("temperature after verification = %d %v, want 200", status, body)
	}
}
