package rerank

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"modelgateway/core/provider"
)

// The body core built goes to {base_url}/rerank with the provider's key and nothing of the
// client's; other families are refused without a call.
func TestForward(t *testing.T) {
	var got *http.Request
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, body = r, string(b)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"results":[{"index":0,"relevance_score":0.9}],"usage":{"total_tokens":7}}`)
	}))
	defer srv.Close()
	call := &provider.ForwardCall{
		Upstream: provider.Upstream{BaseURL: srv.URL + "/v1/", APIKey: "rk-secret", UpstreamModel: "rerank-v3.5"},
		Family:   "rerank", ContentType: "application/json", Body: strings.NewReader(`{"model":"rerank-v3.5","query":"q","documents":["d"]}`),
	}
	resp, err := Adapter{}.Forward(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got.URL.Path != "/v1/rerank" || got.Header.Get("Authorization") != "Bearer rk-secret" || got.Header.Get("User-Agent") != provider.UserAgent {
		t.Errorf("upstream got %s auth %q ua %q", got.URL.Path, got.Header.Get("Authorization"), got.Header.Get("User-Agent"))
	}
	if body != `{"model":"rerank-v3.5","query":"q","documents":["d"]}` {
		t.Errorf("body %s", body)
	}

	call.Family = "moderations"
	_, err = Adapter{}.Forward(context.Background(), call)
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Status != http.StatusBadRequest || pe.Retryable {
		t.Errorf("moderations on a rerank provider: %v", err)
	}
	if _, err := (Adapter{}).Generate(context.Background(), &provider.Call{}); err == nil {
		t.Error("text generation on a rerank provider must fail")
	}
}
