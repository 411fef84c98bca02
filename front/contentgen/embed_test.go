package contentgen

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/testing/protocmp"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
)

// embedCore is core as the front sees it: Embed answers resp or err, Authorize refuses with
// authErr. It records what it was sent.
type embedCore struct {
	corev1.CoreServiceClient
	resp    *corev1.EmbedResponse
	err     error
	authErr error

	mu     sync.Mutex
	got    *corev1.EmbedRequest
	md     metadata.MD
	family string
}

func (f *embedCore) Embed(ctx context.Context, in *corev1.EmbedRequest, _ ...grpc.CallOption) (*corev1.EmbedResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = in
	f.md, _ = metadata.FromOutgoingContext(ctx)
	return f.resp, f.err
}

func (f *embedCore) Authorize(_ context.Context, in *corev1.AuthorizeRequest, _ ...grpc.CallOption) (*corev1.AuthorizeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.family = in.GetEndpointFamily()
	if f.authErr != nil {
		return nil, f.authErr
	}
	return &corev1.AuthorizeResponse{}, nil
}

func (f *embedCore) sent() (*corev1.EmbedRequest, metadata.MD, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got, f.md, f.family
}

func serveEmbed(t *testing.T, core *embedCore, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer sk-client")
	r.Header.Set("X-Request-Id", "req-1")
	w := httptest.NewRecorder()
	(&EmbedHandler{Core: core, Limit: 1 << 10}).ServeHTTP(w, r)
	return w
}

const (
	pathEmbed = "/v1beta/models/text-embed:embedContent"
	pathBatch = "/v1beta/models/text-embed:batchEmbedContents"
)

func int32p(n int32) *int32 { return &n }

func TestDecodeEmbed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, path, body string
		want             *corev1.EmbedRequest
	}{
		{"embedContent, the least", pathEmbed, `{"content":{"parts":[{"text":"Hello"}]}}`,
			&corev1.EmbedRequest{Texts: []string{"Hello"}}},
		{"embedContent, every option", pathEmbed,
			`{"model":"models/text-embed","content":{"role":"user","parts":[{"text":"Hel"},{"inlineData":{"mimeType":"image/png","data":"iVBO"}},{"text":"lo"}]},"taskType":"RETRIEVAL_DOCUMENT","title":"Doc","outputDimensionality":768}`,
			&corev1.EmbedRequest{Texts: []string{"Hello"}, TaskType: "RETRIEVAL_DOCUMENT", Title: "Doc", Dimensions: int32p(768)}},
		{"embedContent, snake_case", pathEmbed, `{"model":"text-embed","content":{"parts":[{"text":"a"}]},"task_type":"CLUSTERING","output_dimensionality":8}`,
			&corev1.EmbedRequest{Texts: []string{"a"}, TaskType: "CLUSTERING", Dimensions: int32p(8)}},
		{"embedContent, a doubled models/ prefix in the path", "/v1beta/models/models/text-embed:embedContent", `{"content":{"parts":[{"text":"a"}]}}`,
			&corev1.EmbedRequest{Texts: []string{"a"}}},
		{"batchEmbedContents", pathBatch,
			`{"requests":[{"model":"models/text-embed","content":{"parts":[{"text":"a"}]},"taskType":"RETRIEVAL_DOCUMENT","title":"A","outputDimensionality":4},{"model":"text-embed","content":{"parts":[{"text":"b"}]},"taskType":"RETRIEVAL_DOCUMENT","title":"B","outputDimensionality":4}]}`,
			&corev1.EmbedRequest{Texts: []string{"a", "b"}, Batch: true, TaskType: "RETRIEVAL_DOCUMENT", Title: "A", Dimensions: int32p(4)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, apiErr := decodeEmbed(tc.path, []byte(tc.body))
			if apiErr != nil {
				t.Fatal(apiErr)
			}
			want := tc.want
			want.EndpointFamily, want.Protocol, want.Model, want.RawBody = FamilyEmbed, corev1.Protocol_PROTOCOL_CONTENT_GENERATION, "text-embed", []byte(tc.body)
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeEmbedErrors(t *testing.T) {
	t.Parallel()
	text := `"content":{"parts":[{"text":"a"}]}`
	cases := []struct{ name, path, body, message string }{
		{"another action", "/v1beta/models/text-embed:generateContent", `{}`,
			"/v1beta/models/text-embed:generateContent is not an embed path; use /v1beta/models/{model}:embedContent or :batchEmbedContents"},
		{"not JSON", pathEmbed, `{`, "the request body is not valid JSON: unexpected EOF at byte 1"},
		{"another body model", pathEmbed, `{"model":"models/other",` + text + `}`,
			`the body's model "models/other" does not match the model "text-embed" in the path`},
		{"no content", pathEmbed, `{"taskType":"CLUSTERING"}`, "content is required"},
		{"no text", pathEmbed, `{"content":{"parts":[{"inlineData":{"mimeType":"image/png","data":"iVBO"}}]}}`, "content has no text to embed"},
		{"an empty text", pathEmbed, `{"content":{"parts":[{"text":""}]}}`, "content has no text to embed"},
		{"both spellings", pathEmbed, `{` + text + `,"taskType":"CLUSTERING","task_type":"CLUSTERING"}`,
			`invalid request body: both "taskType" and "task_type" are set; use one spelling`},
		{"zero dimensions", pathEmbed, `{` + text + `,"outputDimensionality":0}`, "outputDimensionality must be a positive integer"},
		{"no requests", pathBatch, `{}`, "requests is required and must not be empty"},
		{"empty requests", pathBatch, `{"requests":[]}`, "requests is required and must not be empty"},
		{"a request without a model", pathBatch, `{"requests":[{` + text + `}]}`,
			`requests[0].model "" does not name the model "text-embed" in the path`},
		{"a request for another model", pathBatch, `{"requests":[{"model":"models/text-embed",` + text + `},{"model":"models/other",` + text + `}]}`,
			`requests[1].model "models/other" does not name the model "text-embed" in the path`},
		{"a request without content", pathBatch, `{"requests":[{"model":"text-embed",` + text + `},{"model":"text-embed"}]}`,
			"requests[1].content is required"},
		{"different sizes", pathBatch, `{"requests":[{"model":"text-embed",` + text + `,"outputDimensionality":4},{"model":"text-embed",` + text + `}]}`,
			"every request of a batch must ask for the same outputDimensionality"},
		{"a negative size", pathBatch, `{"requests":[{"model":"text-embed",` + text + `,"outputDimensionality":-1}]}`,
			"requests[0].outputDimensionality must be a positive integer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, apiErr := decodeEmbed(tc.path, []byte(tc.body))
			if apiErr == nil {
				t.Fatal("decoded; want an error")
			}
			if apiErr.Code != apierror.InvalidRequest || apiErr.Message != tc.message {
				t.Errorf("got %s %q\nwant %s %q", apiErr.Code, apiErr.Message, apierror.InvalidRequest, tc.message)
			}
		})
	}
}

func TestEmbedBodyErrorsAfterTheKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		authErr error
		status  int
		code    string
	}{
		{"good key", nil, 400, apierror.InvalidRequest},
		{"bad key", apistatus.ToStatus(apierror.New(apierror.EndpointNotAllowed, "the key may not call content.embed"), ""), 403, apierror.EndpointNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			core := &embedCore{authErr: tc.authErr}
			w := serveEmbed(t, core, pathEmbed, `{}`)
			var e apierror.Envelope
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Code != tc.status || e.Error.Code != tc.code {
				t.Errorf("HTTP %d %s", w.Code, w.Body)
			}
			if got, _, family := core.sent(); got != nil || family != FamilyEmbed {
				t.Errorf("core.Embed called with %v; Authorize family %q", got, family)
			}
		})
	}
}

func TestEmbedCoreErrorsAreRendered(t *testing.T) {
	t.Parallel()
	core := &embedCore{err: apistatus.ToStatus(&apierror.Error{Code: apierror.UpstreamError, Message: "upstream status 429: quota", Status: 429}, "")}
	w := serveEmbed(t, core, pathEmbed, `{"content":{"parts":[{"text":"a"}]}}`)
	var e apierror.Envelope
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Code != 429 || e.Error.Code != apierror.UpstreamError || e.Error.RequestID != "req-1" {
		t.Errorf("HTTP %d %s", w.Code, w.Body)
	}
	if _, md, _ := core.sent(); md.Get("authorization")[0] != "Bearer sk-client" {
		t.Errorf("metadata %v", md)
	}
}

// embedVectors hold values whose shortest float32 spelling differs from their float64 one,
// and the edges: the smallest subnormal, negative zero, the largest float32.
var embedVectors = [][]float32{
	{0.1, float32(1.0 / 3), -0.0763245},
	{math.Float32frombits(1), float32(math.Copysign(0, -1)), math.MaxFloat32},
}

func translatedEmbed(n int) *corev1.EmbedResponse {
	resp := &corev1.EmbedResponse{Usage: &corev1.Usage{InputTokens: 3, Reliable: true, Cost: "0.000003", Currency: "EUR"}}
	for _, v := range embedVectors[:n] {
		resp.Embeddings = append(resp.Embeddings, &corev1.Embedding{Values: v})
	}
	return resp
}

func TestEmbedRenderGoldens(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, path, body string
		resp             *corev1.EmbedResponse
	}{
		{"embed_single", pathEmbed, `{"content":{"parts":[{"text":"a"}]}}`, translatedEmbed(1)},
		{"embed_batch", pathBatch, `{"requests":[{"model":"models/text-embed","content":{"parts":[{"text":"a"}]}},{"model":"models/text-embed","content":{"parts":[{"text":"b"}]}}]}`, translatedEmbed(2)},
		{"embed_native", pathEmbed, `{"content":{"parts":[{"text":"a"}]}}`,
			&corev1.EmbedResponse{NativeBody: []byte("{\n  \"embedding\": {\n    \"values\": [\n      0.5\n    ]\n  }\n}\n"), Usage: &corev1.Usage{InputTokens: 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := serveEmbed(t, &embedCore{resp: tc.resp}, tc.path, tc.body)
			got := fmt.Sprintf("HTTP %d\nContent-Type: %s\nX-Request-Cost: %s\nX-Request-Currency: %s\n\n%s", w.Code,
				w.Header().Get("Content-Type"), w.Header().Get("X-Request-Cost"), w.Header().Get("X-Request-Currency"), w.Body)
			golden := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("output differs from %s (-want +got):\n%s", golden, diff)
			}
			if !json.Valid(w.Body.Bytes()) {
				t.Errorf("not JSON: %s", w.Body)
			}
		})
	}
}

func TestEmbedRenderRefusesWhatItCannotShow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		resp *corev1.EmbedResponse
	}{
		{"two vectors for one content", translatedEmbed(2)},
		{"an infinity", &corev1.EmbedResponse{Embeddings: []*corev1.Embedding{{Values: []float32{float32(math.Inf(-1))}}}}},
	} {
		w := serveEmbed(t, &embedCore{resp: tc.resp}, pathEmbed, `{"content":{"parts":[{"text":"a"}]}}`)
		if w.Code != 502 || !strings.Contains(w.Body.String(), apierror.UpstreamError) {
			t.Errorf("%s: HTTP %d %s", tc.name, w.Code, w.Body)
		}
	}
}

// The official Go SDK calls :batchEmbedContents even for EmbedContent; it must read the
// answer back into the same float32 values.
func TestGenAISDKEmbedContent(t *testing.T) {
	t.Parallel()
	core := &embedCore{resp: translatedEmbed(2)}
	srv := httptest.NewServer(&EmbedHandler{Core: core, Limit: 1 << 20})
	t.Cleanup(srv.Close)
	c := sdkClient(t, srv)
	dims := int32(3)
	res, err := c.Models.EmbedContent(context.Background(), "text-embed",
		[]*genai.Content{genai.NewContentFromText("a", genai.RoleUser), genai.NewContentFromText("b", genai.RoleUser)},
		&genai.EmbedContentConfig{TaskType: "RETRIEVAL_QUERY", OutputDimensionality: &dims})
	if err != nil {
		t.Fatalf("EmbedContent: %v", err)
	}
	if len(res.Embeddings) != len(embedVectors) {
		t.Fatalf("embeddings %+v", res.Embeddings)
	}
	for i, e := range res.Embeddings {
		for j, f := range embedVectors[i] {
			if j >= len(e.Values) || math.Float32bits(e.Values[j]) != math.Float32bits(f) {
				t.Errorf("embedding %d = %v, want %v", i, e.Values, embedVectors[i])
				break
			}
		}
	}
	got, _, _ := core.sent()
	want := &corev1.EmbedRequest{EndpointFamily: FamilyEmbed, Protocol: corev1.Protocol_PROTOCOL_CONTENT_GENERATION, Model: "text-embed",
		Batch: true, Texts: []string{"a", "b"}, TaskType: "RETRIEVAL_QUERY", Dimensions: &dims, RawBody: got.GetRawBody()}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
}
