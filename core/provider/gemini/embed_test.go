package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/provider"
	"modelgateway/core/provider/openai"
)

func embedCall(base string, req *corev1.EmbedRequest) *provider.EmbedCall {
	return &provider.EmbedCall{Request: req, Upstream: provider.Upstream{PublicModel: "embed", UpstreamModel: "gemini-embedding-001", BaseURL: base + "/", APIKey: "secret"}}
}

func contentEmbed(batch bool, body string) *corev1.EmbedRequest {
	return &corev1.EmbedRequest{EndpointFamily: "content.embed", Protocol: corev1.Protocol_PROTOCOL_CONTENT_GENERATION,
		Model: "embed", Batch: batch, Texts: []string{"Hi"}, RawBody: []byte(body)}
}

// openAIEmbed is what an embeddings client decodes to: it takes the translated path.
func openAIEmbed(texts ...string) *corev1.EmbedRequest {
	return &corev1.EmbedRequest{EndpointFamily: "embeddings", Protocol: corev1.Protocol_PROTOCOL_EMBEDDINGS,
		Model: "embed", Texts: texts, RawBody: []byte(`{"model":"embed","input":"ignored"}`)}
}

var wantVectors = [][]float32{
	{-0.0044869436, 0.0073913057, 0.0145023335, -0.0763245},
	{0.021936772, -0.008122563, math.Float32frombits(1), float32(math.Copysign(0, -1))},
}

func sameBits(a, b [][]float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if math.Float32bits(a[i][j]) != math.Float32bits(b[i][j]) {
				return false
			}
		}
	}
	return true
}

func TestEmbedPassthrough(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, fixture, body string
		batch               bool
		path, sent          string
	}{
		{"embedContent with a body model", "embed_content_answer.json",
			`{"model":"models/embed","content":{"parts":[{"text":"Hi"}]},"taskType":"RETRIEVAL_QUERY","futureField":{"x":1}}`, false,
			"/v1beta/models/gemini-embedding-001:embedContent",
			`{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"Hi"}]},"taskType":"RETRIEVAL_QUERY","futureField":{"x":1}}`},
		{"embedContent without a model", "embed_content_answer.json",
			`{"content":{"parts":[{"text":"Hi"}]},"output_dimensionality":4}`, false,
			"/v1beta/models/gemini-embedding-001:embedContent",
			`{"content":{"parts":[{"text":"Hi"}]},"output_dimensionality":4}`},
		{"batchEmbedContents, both model spellings", "batch_embed_answer.json",
			`{"requests":[{"model":"models/embed","content":{"parts":[{"text":"a"}]},"title":"T"},{"model":"embed","content":{"parts":[{"text":"b"}]}}]}`, true,
			"/v1beta/models/gemini-embedding-001:batchEmbedContents",
			`{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"a"}]},"title":"T"},{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"b"}]}}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			answer := fixture(t, tc.fixture)
			srv, got := upstream(t, 200, answer, false)
			res, err := Adapter{}.Embed(context.Background(), embedCall(srv.URL, contentEmbed(tc.batch, tc.body)))
			if err != nil {
				t.Fatal(err)
			}
			path, query, key, sent := got.get()
			if path != tc.path || query != "" || key != "secret" {
				t.Errorf("upstream saw %s?%s key %q", path, query, key)
			}
			if string(sent) != tc.sent {
				t.Errorf("upstream body\n got %s\nwant %s", sent, tc.sent)
			}
			if !bytes.Equal(res.NativeBody, answer) || res.Vectors != nil {
				t.Errorf("native body %s vectors %v, want the answer as it is", res.NativeBody, res.Vectors)
			}
			if res.Usage.Reliable {
				t.Error("the embed routes report no usage: it must be unreliable")
			}
		})
	}
}

func TestEmbedTranslated(t *testing.T) {
	t.Parallel()
	srv, got := upstream(t, 200, fixture(t, "batch_embed_answer.json"), false)
	req := openAIEmbed("Hello", "wörld \"quoted\"")
	dims := int32(768)
	req.Dimensions, req.TaskType, req.Title = &dims, "RETRIEVAL_DOCUMENT", "A title"
	call := embedCall(srv.URL, req)
	call.UpstreamModel = "models/gemini-embedding-001" // the catalogue may carry the prefix
	res, err := Adapter{}.Embed(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	if !sameBits(res.Vectors, wantVectors) {
		t.Errorf("vectors %v, want %v", res.Vectors, wantVectors)
	}
	if res.NativeBody != nil || res.Usage.Reliable {
		t.Errorf("native body %s usage %+v", res.NativeBody, res.Usage)
	}
	path, _, key, sent := got.get()
	if path != "/v1beta/models/gemini-embedding-001:batchEmbedContents" || key != "secret" {
		t.Errorf("upstream saw %s key %q", path, key)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, sent, "", "  "); err != nil {
		t.Fatalf("the upstream body is not JSON: %v: %s", err, sent)
	}
	pretty.WriteByte('\n')
	golden := filepath.Join("testdata", "embed_request_translated.json")
	if *update {
		if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), pretty.String()); diff != "" {
		t.Errorf("request differs from %s (-want +got):\n%s", golden, diff)
	}
}

func TestEmbedTranslatedLeavesUnsetFieldsOut(t *testing.T) {
	t.Parallel()
	srv, got := upstream(t, 200, []byte(`{"embeddings":[{"values":[0.5]}]}`), false)
	res, err := Adapter{}.Embed(context.Background(), embedCall(srv.URL, openAIEmbed("a")))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Vectors) != 1 || len(res.Vectors[0]) != 1 || res.Vectors[0][0] != 0.5 {
		t.Errorf("vectors %v", res.Vectors)
	}
	if _, _, _, sent := got.get(); string(sent) != `{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"a"}]}}]}` {
		t.Errorf("upstream body %s", sent)
	}
}

func TestEmbedTranslatedRefusesBadAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, answer string }{
		{"too few", `{"embeddings":[{"values":[1]}]}`},
		{"too many", `{"embeddings":[{"values":[1]},{"values":[2]},{"values":[3]}]}`},
		{"an empty vector", `{"embeddings":[{"values":[1]},{"values":[]}]}`},
		{"a value beyond float32", `{"embeddings":[{"values":[1]},{"values":[1e39]}]}`},
		{"not JSON", `<html>`},
		{"an error body with status 200", `{"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := upstream(t, 200, []byte(tc.answer), false)
			_, err := Adapter{}.Embed(context.Background(), embedCall(srv.URL, openAIEmbed("a", "b")))
			var pe *provider.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *provider.Error", err)
			}
		})
	}
}

func TestEmbedUpstreamErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status    int
		body      string
		retryable bool
		message   string
	}{
		{400, `{"error":{"code":400,"message":"* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch","status":"INVALID_ARGUMENT"}}`, false,
			"upstream status 400: * BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch"},
		{403, `{"error":{"code":403,"message":"Method doesn't allow unregistered callers (key AIza...)","status":"PERMISSION_DENIED"}}`, false,
			"the upstream refused the gateway's credentials (status 403)"},
		{429, `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`, true,
			"upstream status 429: Resource has been exhausted (e.g. check quota)."},
		{503, `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`, true,
			"upstream status 503: The model is overloaded."},
	}
	for _, tc := range cases {
		for _, req := range []*corev1.EmbedRequest{openAIEmbed("a"), contentEmbed(true, `{"requests":[]}`)} {
			t.Run(fmt.Sprint(tc.status, "/", req.GetProtocol()), func(t *testing.T) {
				t.Parallel()
				srv, _ := upstream(t, tc.status, []byte(tc.body), false)
				_, err := Adapter{}.Embed(context.Background(), embedCall(srv.URL, req))
				var pe *provider.Error
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v, want a *provider.Error", err)
				}
				if pe.Status != tc.status || pe.Retryable != tc.retryable || pe.Message != tc.message {
					t.Errorf("got status %d retryable %v message %q", pe.Status, pe.Retryable, pe.Message)
				}
			})
		}
	}
}

func TestEmbedTokenInputIsRefused(t *testing.T) {
	t.Parallel()
	srv, got := upstream(t, 200, []byte(`{}`), false)
	req := openAIEmbed()
	req.TokenInput = true
	_, err := Adapter{}.Embed(context.Background(), embedCall(srv.URL, req))
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Status != http.StatusBadRequest || pe.Retryable || pe.Message == "" {
		t.Fatalf("err = %#v, want a final 400 with a message", err)
	}
	if path, _, _, _ := got.get(); path != "" {
		t.Errorf("the upstream was called: %s", path)
	}
}

// The simulator kind addresses each client in its own protocol below one root.
func TestNativeEmbedPicksTheClientsProtocol(t *testing.T) {
	t.Parallel()
	n := provider.ByClientProtocol{OpenAI: openai.Adapter{}, Gemini: Adapter{}}
	cases := []struct {
		name, base, answer string
		req                *corev1.EmbedRequest
		path               string
	}{
		{"embeddings client", "/v1", `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1]}],"model":"gemini-embedding-001","usage":{"prompt_tokens":1,"total_tokens":1}}`,
			&corev1.EmbedRequest{Protocol: corev1.Protocol_PROTOCOL_EMBEDDINGS, RawBody: []byte(`{"model":"embed","input":"a"}`)}, "/v1/embeddings"},
		{"content-generation client", "/v1", `{"embedding":{"values":[1]}}`,
			contentEmbed(false, `{"content":{"parts":[{"text":"a"}]}}`), "/v1beta/models/gemini-embedding-001:embedContent"},
		{"content-generation client at the root", "", `{"embeddings":[{"values":[1]}]}`,
			contentEmbed(true, `{"requests":[{"content":{"parts":[{"text":"a"}]}}]}`), "/v1beta/models/gemini-embedding-001:batchEmbedContents"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, got := upstream(t, 200, []byte(tc.answer), false)
			res, err := n.Embed(context.Background(), embedCall(srv.URL+tc.base, tc.req))
			if err != nil {
				t.Fatal(err)
			}
			if path, _, _, _ := got.get(); path != tc.path {
				t.Errorf("path = %q, want %q", path, tc.path)
			}
			if res.NativeBody == nil {
				t.Error("the simulator always passes through")
			}
		})
	}
	t.Run("default base", func(t *testing.T) {
		t.Parallel()
		srv, got := upstream(t, 200, []byte(`{"embedding":{"values":[1]}}`), false)
		d := n
		d.DefaultBase = srv.URL
		if _, err := d.Embed(context.Background(), embedCall("", contentEmbed(false, `{}`))); err != nil {
			t.Fatal(err)
		}
		if path, _, _, _ := got.get(); path != "/v1beta/models/gemini-embedding-001:embedContent" {
			t.Errorf("path = %q", path)
		}
	})
	t.Run("an adapter that cannot embed", func(t *testing.T) {
		t.Parallel()
		_, err := n.Embed(context.Background(), embedCall("http://127.0.0.1:1", &corev1.EmbedRequest{Protocol: corev1.Protocol_PROTOCOL_MESSAGES}))
		var pe *provider.Error
		if !errors.As(err, &pe) || pe.Retryable {
			t.Fatalf("err = %v, want a final *provider.Error", err)
		}
	})
}
