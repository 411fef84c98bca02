package embeddings

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"flag"
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
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/testing/protocmp"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fakeCore is core as the front sees it: Embed answers resp or err, Authorize refuses with
// authErr. It records what it was sent.
type fakeCore struct {
	corev1.CoreServiceClient
	resp    *corev1.EmbedResponse
	err     error
	authErr error

	mu     sync.Mutex
	got    *corev1.EmbedRequest
	md     metadata.MD
	family string // of the last Authorize
}

func (f *fakeCore) Embed(ctx context.Context, in *corev1.EmbedRequest, _ ...grpc.CallOption) (*corev1.EmbedResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = in
	f.md, _ = metadata.FromOutgoingContext(ctx)
	return f.resp, f.err
}

func (f *fakeCore) Authorize(_ context.Context, in *corev1.AuthorizeRequest, _ ...grpc.CallOption) (*corev1.AuthorizeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.family = in.GetEndpointFamily()
	if f.authErr != nil {
		return nil, f.authErr
	}
	return &corev1.AuthorizeResponse{}, nil
}

func (f *fakeCore) sent() (*corev1.EmbedRequest, metadata.MD, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got, f.md, f.family
}

func serve(t *testing.T, core *fakeCore, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/v1/embeddings", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer sk-client")
	r.Header.Set("X-Request-Id", "req-1")
	w := httptest.NewRecorder()
	(&Handler{Core: core, Limit: 1 << 10}).ServeHTTP(w, r)
	return w
}

func dims(n int32) *int32 { return &n }

func TestDecode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		want       *corev1.EmbedRequest
		base64     bool
	}{
		{"one string", `{"model":"m","input":"Hello"}`,
			&corev1.EmbedRequest{Texts: []string{"Hello"}}, false},
		{"strings, every option", `{"model":"m","input":[ "a" , "b"],"encoding_format":"base64","dimensions":256,"user":"u-1"}`,
			&corev1.EmbedRequest{Texts: []string{"a", "b"}, Dimensions: dims(256), Parameters: []string{"user"}}, true},
		{"token ids", `{"model":"m","input":[1, 0, 4294967295],"encoding_format":"float"}`,
			&corev1.EmbedRequest{TokenInput: true}, false},
		{"arrays of token ids", `{"model":"m","input":[[1,2],[3]]}`,
			&corev1.EmbedRequest{TokenInput: true}, false},
		{"stream is passed on for core to refuse", `{"model":"m","input":"a","stream":true}`,
			&corev1.EmbedRequest{Texts: []string{"a"}, Stream: true}, false},
		{"null options are absent", `{"model":"m","input":"a","encoding_format":null,"dimensions":null,"user":null,"stream":null}`,
			&corev1.EmbedRequest{Texts: []string{"a"}}, false},
		{"unknown fields are kept for the upstream", `{"model":"m","input":"a","x_future":{"y":1}}`,
			&corev1.EmbedRequest{Texts: []string{"a"}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, apiErr := decode([]byte(tc.body))
			if apiErr != nil {
				t.Fatal(apiErr)
			}
			want := tc.want
			want.EndpointFamily, want.Protocol, want.Model, want.RawBody = Family, corev1.Protocol_PROTOCOL_EMBEDDINGS, "m", []byte(tc.body)
			if diff := cmp.Diff(want, got.req, protocmp.Transform()); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
			if got.base64 != tc.base64 {
				t.Errorf("base64 = %v, want %v", got.base64, tc.base64)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	shape := "input must be a string, an array of strings, an array of token ids (non-negative integers) or an array of token-id arrays"
	many := `["x"` + strings.Repeat(`,"x"`, maxInputs) + `]`
	cases := []struct{ name, body, message string }{
		{"not JSON", `{"model":`, "the body is not a valid embeddings request: not valid JSON: unexpected EOF at byte 9 (in model)"},
		{"not an object", `[]`, "the body is not a valid embeddings request: the body must be an object, not an array"},
		{"no model", `{"input":"a"}`, "model is required"},
		{"model not a string", `{"model":1,"input":"a"}`, "the body is not a valid embeddings request: model must be a string, not a number"},
		{"no input", `{"model":"m"}`, "input is required"},
		{"null input", `{"model":"m","input":null}`, "input is required"},
		{"empty string", `{"model":"m","input":""}`, "input must not be an empty string"},
		{"empty array", `{"model":"m","input":[]}`, "input must not be an empty array"},
		{"an empty string in the array", `{"model":"m","input":["a",""]}`, "input[1] must not be an empty string"},
		{"an empty token array", `{"model":"m","input":[[1],[]]}`, "input[1] must not be an empty array"},
		{"too many items", `{"model":"m","input":` + many + `}`, "input must not hold more than 2048 items, it holds 2049"},
		{"a number", `{"model":"m","input":1}`, shape},
		{"an object", `{"model":"m","input":{"text":"a"}}`, shape},
		{"strings and numbers", `{"model":"m","input":["a",1]}`, shape},
		{"numbers and strings", `{"model":"m","input":[1,"a"]}`, shape},
		{"a negative token id", `{"model":"m","input":[1,-2]}`, shape},
		{"a fractional token id", `{"model":"m","input":[1.5]}`, shape},
		{"a null token id", `{"model":"m","input":[null]}`, shape},
		{"a null inside a token array", `{"model":"m","input":[[1,null]]}`, shape},
		{"a string inside token arrays", `{"model":"m","input":[[1],"a"]}`, shape},
		{"arrays of strings", `{"model":"m","input":[["a"]]}`, shape},
		{"unknown encoding_format", `{"model":"m","input":"a","encoding_format":"int8"}`, `encoding_format must be "float" or "base64", not "int8"`},
		{"zero dimensions", `{"model":"m","input":"a","dimensions":0}`, "dimensions must be a positive integer"},
		{"huge dimensions", `{"model":"m","input":"a","dimensions":4294967296}`, "dimensions must be a positive integer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, apiErr := decode([]byte(tc.body))
			if apiErr == nil {
				t.Fatal("decoded; want an error")
			}
			if apiErr.Code != apierror.InvalidRequest || apiErr.Message != tc.message {
				t.Errorf("got %s %q\nwant %s %q", apiErr.Code, apiErr.Message, apierror.InvalidRequest, tc.message)
			}
		})
	}
}

func envelope(t *testing.T, w *httptest.ResponseRecorder) apierror.Body {
	t.Helper()
	var e apierror.Envelope
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatalf("not an error envelope: %v: %s", err, w.Body)
	}
	return e.Error
}

func TestBodyErrorsAfterTheKey(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		authErr    error
		status     int
		code       string
	}{
		{"a bad body with a good key", `{"model":"m","input":""}`, nil, 400, apierror.InvalidRequest},
		{"a bad key wins over a bad body", `{"model":"m","input":""}`,
			apistatus.ToStatus(apierror.New(apierror.InvalidKey, "the API key is not valid"), ""), 401, apierror.InvalidKey},
		{"a body over the limit", `{"model":"m","input":"` + strings.Repeat("x", 2<<10) + `"}`, nil, 413, apierror.PayloadTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			core := &fakeCore{authErr: tc.authErr}
			w := serve(t, core, tc.body)
			if w.Code != tc.status || envelope(t, w).Code != tc.code || envelope(t, w).RequestID != "req-1" {
				t.Errorf("HTTP %d %s", w.Code, w.Body)
			}
			if got, _, family := core.sent(); got != nil || family != Family {
				t.Errorf("core.Embed called with %v; Authorize family %q", got, family)
			}
		})
	}
}

func TestCoreErrorsAreRendered(t *testing.T) {
	t.Parallel()
	core := &fakeCore{err: apistatus.ToStatus(apierror.New(apierror.StreamingNotSupported, "embeddings does not stream"), "")}
	w := serve(t, core, `{"model":"m","input":"a","stream":true}`)
	if w.Code != 400 || envelope(t, w).Code != apierror.StreamingNotSupported {
		t.Errorf("HTTP %d %s", w.Code, w.Body)
	}
	got, md, _ := core.sent()
	if !got.GetStream() {
		t.Error("stream was not passed on to core")
	}
	if md.Get("authorization")[0] != "Bearer sk-client" || md.Get("x-request-id")[0] != "req-1" {
		t.Errorf("metadata %v", md)
	}
}

// vectors holds values whose shortest float32 spelling differs from their float64 one, and
// the edges: the smallest subnormal, negative zero, the largest float32.
var vectors = [][]float32{
	{0.1, float32(1.0 / 3), -0.0763245, 16777216},
	{math.Float32frombits(1), float32(math.Copysign(0, -1)), math.MaxFloat32, 1e-7},
}

func translated() *corev1.EmbedResponse {
	resp := &corev1.EmbedResponse{Usage: &corev1.Usage{InputTokens: 7, Reliable: true, Cost: "0.000014", Currency: "USD"}}
	for _, v := range vectors {
		resp.Embeddings = append(resp.Embeddings, &corev1.Embedding{Values: v})
	}
	return resp
}

func golden(t *testing.T, name string, w *httptest.ResponseRecorder) {
	t.Helper()
	got := fmt.Sprintf("HTTP %d\nContent-Type: %s\nX-Request-Cost: %s\nX-Request-Currency: %s\n\n%s", w.Code,
		w.Header().Get("Content-Type"), w.Header().Get("X-Request-Cost"), w.Header().Get("X-Request-Currency"), w.Body)
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("output differs from %s (-want +got):\n%s", path, diff)
	}
}

func TestRenderTranslatedFloats(t *testing.T) {
	t.Parallel()
	w := serve(t, &fakeCore{resp: translated()}, `{"model":"public-embed","input":["a","b"]}`)
	golden(t, "list_float.golden", w)
	var list struct {
		Data []struct {
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	for i, d := range list.Data {
		checkBits(t, i, d.Embedding)
	}
}

func TestRenderTranslatedBase64(t *testing.T) {
	t.Parallel()
	w := serve(t, &fakeCore{resp: translated()}, `{"model":"public-embed","input":["a","b"],"encoding_format":"base64"}`)
	golden(t, "list_base64.golden", w)
	var list struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	for i, d := range list.Data {
		raw, err := base64.StdEncoding.DecodeString(d.Embedding)
		if err != nil || len(raw)%4 != 0 {
			t.Fatalf("embedding %d: %v (%d bytes)", i, err, len(raw))
		}
		v := make([]float32, len(raw)/4)
		for j := range v {
			v[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
		}
		checkBits(t, i, v)
	}
}

func checkBits(t *testing.T, i int, got []float32) {
	t.Helper()
	want := vectors[i]
	if len(got) != len(want) {
		t.Fatalf("embedding %d has %d values, want %d", i, len(got), len(want))
	}
	for j := range want {
		if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
			t.Errorf("embedding %d value %d = %g (%#x), want %g (%#x)", i, j, got[j], math.Float32bits(got[j]), want[j], math.Float32bits(want[j]))
		}
	}
}

func TestNativeBodyGoesAsItIs(t *testing.T) {
	t.Parallel()
	// Whatever the client's encoding_format, the upstream answered the same request.
	native := `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"model":"public-embed","usage":{"prompt_tokens":1,"total_tokens":1},"x_extra":true}`
	for _, body := range []string{`{"model":"m","input":"a"}`, `{"model":"m","input":"a","encoding_format":"base64"}`} {
		w := serve(t, &fakeCore{resp: &corev1.EmbedResponse{NativeBody: []byte(native), Usage: &corev1.Usage{InputTokens: 1}}}, body)
		if w.Code != 200 || w.Body.String() != native || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("HTTP %d %q %s", w.Code, w.Header().Get("Content-Type"), w.Body)
		}
		if h := w.Header().Get("X-Request-Cost"); h != "" {
			t.Errorf("X-Request-Cost = %q for an uncharged call", h)
		}
	}
}

func TestNonFiniteValuesAreAnUpstreamError(t *testing.T) {
	t.Parallel()
	resp := &corev1.EmbedResponse{Embeddings: []*corev1.Embedding{{Values: []float32{float32(math.Inf(1))}}}}
	w := serve(t, &fakeCore{resp: resp}, `{"model":"m","input":"a"}`)
	if w.Code != 502 || envelope(t, w).Code != apierror.UpstreamError {
		t.Errorf("HTTP %d %s", w.Code, w.Body)
	}
	// base64 carries any bits.
	w = serve(t, &fakeCore{resp: resp}, `{"model":"m","input":"a","encoding_format":"base64"}`)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"embedding":"AACAfw=="`) {
		t.Errorf("HTTP %d %s", w.Code, w.Body)
	}
}

// The official Go SDK reads both renderings back into the same float64 values, and its
// requests decode as they should.
func TestOpenAISDKReadsTheAnswers(t *testing.T) {
	t.Parallel()
	core := &fakeCore{resp: translated()}
	srv := httptest.NewServer(&Handler{Core: core, Limit: 1 << 20})
	t.Cleanup(srv.Close)
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("sk-client"), option.WithMaxRetries(0))
	for _, format := range []openai.EmbeddingNewParamsEncodingFormat{"", openai.EmbeddingNewParamsEncodingFormatFloat, openai.EmbeddingNewParamsEncodingFormatBase64} {
		t.Run(string(format), func(t *testing.T) {
			params := openai.EmbeddingNewParams{
				Model:      "public-embed",
				Input:      openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}},
				Dimensions: openai.Int(4),
			}
			if format != "" {
				params.EncodingFormat = format
			}
			res, err := client.Embeddings.New(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			if res.Model != "public-embed" || res.Usage.PromptTokens != 7 || res.Usage.TotalTokens != 7 || len(res.Data) != 2 {
				t.Fatalf("answer %+v", res)
			}
			for i, d := range res.Data {
				if d.Index != int64(i) {
					t.Errorf("data[%d].index = %d", i, d.Index)
				}
				got := make([]float32, len(d.Embedding))
				for j, f := range d.Embedding {
					// base64 carries the float32 itself; a decimal spelling reads back as
					// the nearest float64, which rounds to the same float32.
					if format == openai.EmbeddingNewParamsEncodingFormatBase64 && float64(float32(f)) != f {
						t.Errorf("data[%d][%d] = %v is not a float32 value", i, j, f)
					}
					got[j] = float32(f)
				}
				checkBits(t, i, got)
			}
			req, _, _ := core.sent()
			if diff := cmp.Diff([]string{"a", "b"}, req.GetTexts()); diff != "" || req.GetDimensions() != 4 {
				t.Errorf("texts (-want +got):\n%s dimensions %d", diff, req.GetDimensions())
			}
		})
	}
}
