package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
	"modelgateway/core/provider"
)

// wantBits are the vectors of both recorded answers, as float32 bit patterns: ordinary
// values, the smallest subnormal, negative zero and the largest float32.
var wantBits = [][]uint32{
	{0x3b172766, 0xbc18d180, 0xbb3d0538, 0x3c8b6221},
	{0xbc4a7b37, 0x00000001, 0x80000000, 0x7f7fffff},
}

func bitsOf(vs [][]float32) [][]uint32 {
	out := make([][]uint32, len(vs))
	for i, v := range vs {
		out[i] = make([]uint32, len(v))
		for j, f := range v {
			out[i][j] = math.Float32bits(f)
		}
	}
	return out
}

func embedCall(base string, req *corev1.EmbedRequest) *provider.EmbedCall {
	return &provider.EmbedCall{Request: req, Upstream: chatCall(base, nil).Upstream}
}

// contentEmbedRequest is what a content-generation client decodes to: it takes the
// translated path.
func contentEmbedRequest(texts ...string) *corev1.EmbedRequest {
	return &corev1.EmbedRequest{EndpointFamily: "content.embed", Protocol: corev1.Protocol_PROTOCOL_CONTENT_GENERATION,
		Model: "public-model", Texts: texts, Batch: true,
		RawBody: []byte(`{"requests":[{"model":"models/public-model","content":{"parts":[{"text":"ignored"}]}}]}`)}
}

func answerUpstream(t *testing.T, status int, body string) *chatUpstream {
	t.Helper()
	return &chatUpstream{t: t, status: status, body: []byte(body), ctype: "application/json"}
}

func TestEmbedPassthrough(t *testing.T) {
	t.Parallel()
	u := chatReplay(t, "embeddings_float.json", false)
	req := &corev1.EmbedRequest{EndpointFamily: "embeddings", Protocol: corev1.Protocol_PROTOCOL_EMBEDDINGS, Model: "public-model",
		Texts:   []string{"a", "b"},
		RawBody: []byte(`{"model":"public-model","input":["a","b"],"encoding_format":"float","x_future":{"kept":true}}`)}
	call := embedCall(chatServe(t, u), req)
	call.UpstreamModel = "text-embedding-3-small"
	res, err := Adapter{}.Embed(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	h, path, body := u.request()
	if path != "/v1/embeddings" {
		t.Errorf("path = %q", path)
	}
	if got := h.Get("Authorization"); got != "Bearer sk-upstream" {
		t.Errorf("Authorization = %q", got)
	}
	if want := `{"model":"text-embedding-3-small","input":["a","b"],"encoding_format":"float","x_future":{"kept":true}}`; string(body) != want {
		t.Errorf("upstream body\n got %s\nwant %s", body, want)
	}
	// The indented answer keeps every byte but the model's value.
	want := strings.Replace(string(u.body), `"model": "text-embedding-3-small"`, `"model": "public-model"`, 1)
	if want == string(u.body) {
		t.Fatal("the fixture does not name the upstream model")
	}
	if diff := cmp.Diff(want, string(res.NativeBody)); diff != "" {
		t.Errorf("native body (-want +got):\n%s", diff)
	}
	if res.Vectors != nil {
		t.Errorf("a passthrough answer got vectors: %v", res.Vectors)
	}
	if diff := cmp.Diff(metering.Usage{Input: 8, Reliable: true}, res.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

func TestEmbedPassthroughOfTokenInput(t *testing.T) {
	t.Parallel()
	u := chatReplay(t, "embeddings_base64.json", false)
	req := &corev1.EmbedRequest{Protocol: corev1.Protocol_PROTOCOL_EMBEDDINGS, TokenInput: true,
		RawBody: []byte(`{"input":[[1,2],[3]],"model":"public-model","encoding_format":"base64"}`)}
	res, err := Adapter{}.Embed(context.Background(), embedCall(chatServe(t, u), req))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, body := u.request(); string(body) != `{"input":[[1,2],[3]],"model":"gpt-4o-mini","encoding_format":"base64"}` {
		t.Errorf("upstream body %s", body)
	}
	if !bytes.Contains(res.NativeBody, []byte(`"embedding": "N3tKvAEAAAAAAACA//9/fw=="`)) {
		t.Errorf("native body changed: %s", res.NativeBody)
	}
}

func TestEmbedTranslatedRequestBody(t *testing.T) {
	t.Parallel()
	u := chatReplay(t, "embeddings_base64.json", false)
	req := contentEmbedRequest("Hello", "wörld \"quoted\"")
	dims := int32(256)
	req.Dimensions, req.TaskType, req.Title = &dims, "RETRIEVAL_DOCUMENT", "A title"
	call := embedCall(chatServe(t, u), req)
	call.UpstreamModel = "text-embedding-3-small"
	if _, err := (Adapter{}).Embed(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	h, path, body := u.request()
	if path != "/v1/embeddings" || h.Get("Authorization") != "Bearer sk-upstream" || h.Get("Content-Type") != "application/json" {
		t.Errorf("path %q headers %v", path, h)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, body, "", "  "); err != nil {
		t.Fatalf("the upstream body is not JSON: %v: %s", err, body)
	}
	pretty.WriteByte('\n')
	chatGolden(t, "embed_request_translated.json", pretty.String())

	// Without dimensions the field is left out: older models refuse it.
	u = chatReplay(t, "embeddings_base64.json", false)
	if _, err := (Adapter{}).Embed(context.Background(), embedCall(chatServe(t, u), contentEmbedRequest("a", "b"))); err != nil {
		t.Fatal(err)
	}
	if _, _, body := u.request(); string(body) != `{"model":"gpt-4o-mini","input":["a","b"],"encoding_format":"base64"}` {
		t.Errorf("upstream body %s", body)
	}
}

func TestEmbedTranslatedDecodesRecordedAnswers(t *testing.T) {
	t.Parallel()
	// The base64 answer is what we ask for; the float one is what an upstream that ignores
	// encoding_format sends. Both must give the same bits.
	for _, file := range []string{"embeddings_base64.json", "embeddings_float.json"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			u := chatReplay(t, file, false)
			res, err := Adapter{}.Embed(context.Background(), embedCall(chatServe(t, u), contentEmbedRequest("a", "b")))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantBits, bitsOf(res.Vectors)); diff != "" {
				t.Errorf("vector bits (-want +got):\n%s", diff)
			}
			if res.NativeBody != nil {
				t.Errorf("a translated answer got a native body")
			}
			if diff := cmp.Diff(metering.Usage{Input: 8, Reliable: true}, res.Usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

// b64 encodes float32 bit patterns the way the embeddings API does.
func b64(bits ...uint32) string {
	b := make([]byte, 4*len(bits))
	for i, x := range bits {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func TestEmbedTranslatedAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, answer string
		want         [][]uint32 // nil: an error
		usage        metering.Usage
	}{
		{"vectors are put in index order",
			`{"data":[{"index":1,"embedding":"` + b64(2) + `"},{"index":0,"embedding":"` + b64(1) + `"}],"usage":{"prompt_tokens":3,"total_tokens":3}}`,
			[][]uint32{{1}, {2}}, metering.Usage{Input: 3, Reliable: true}},
		{"no usage is unreliable",
			`{"data":[{"index":0,"embedding":[0.5]},{"index":1,"embedding":[0.25]}]}`,
			[][]uint32{{0x3f000000}, {0x3e800000}}, metering.Unreliable("no usage reported")},
		{"a fractional count is unreliable",
			`{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[2]}],"usage":{"prompt_tokens":2.5}}`,
			[][]uint32{{0x3f800000}, {0x40000000}}, metering.Unreliable("usage not decodable: 2.5 is not a token count")},
		{"too few embeddings", `{"data":[{"index":0,"embedding":[1]}]}`, nil, metering.Usage{}},
		{"a repeated index", `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]}]}`, nil, metering.Usage{}},
		{"an index out of range", `{"data":[{"index":0,"embedding":[1]},{"index":2,"embedding":[2]}]}`, nil, metering.Usage{}},
		{"base64 that is not whole float32s", `{"data":[{"index":0,"embedding":"AAAA"},{"index":1,"embedding":"AAAAAAA="}]}`, nil, metering.Usage{}},
		{"not base64", `{"data":[{"index":0,"embedding":"!!"},{"index":1,"embedding":[1]}]}`, nil, metering.Usage{}},
		{"a NaN", `{"data":[{"index":0,"embedding":"` + b64(0x7fc00000) + `"},{"index":1,"embedding":[1]}]}`, nil, metering.Usage{}},
		{"an empty vector", `{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[1]}]}`, nil, metering.Usage{}},
		{"a missing vector", `{"data":[{"index":0},{"index":1,"embedding":[1]}]}`, nil, metering.Usage{}},
		{"not JSON", `<html>`, nil, metering.Usage{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u := answerUpstream(t, http.StatusOK, tc.answer)
			res, err := Adapter{}.Embed(context.Background(), embedCall(chatServe(t, u), contentEmbedRequest("a", "b")))
			if tc.want == nil {
				var pe *provider.Error
				if !errors.As(err, &pe) || pe.Retryable {
					t.Fatalf("err = %v, want a final *provider.Error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, bitsOf(res.Vectors)); diff != "" {
				t.Errorf("vector bits (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.usage, res.Usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEmbedUpstreamErrors(t *testing.T) {
	t.Parallel()
	const body = `{"error":{"message":"This model does not support specifying dimensions.","type":"invalid_request_error","param":null,"code":null}}`
	cases := []struct {
		status    int
		retryable bool
		message   string
	}{
		{400, false, "upstream status 400: This model does not support specifying dimensions."},
		{401, false, "the upstream refused the gateway's credentials (status 401)"},
		{429, true, "upstream status 429: This model does not support specifying dimensions."},
		{503, true, "upstream status 503: This model does not support specifying dimensions."},
	}
	for _, tc := range cases {
		for _, proto := range []corev1.Protocol{corev1.Protocol_PROTOCOL_EMBEDDINGS, corev1.Protocol_PROTOCOL_CONTENT_GENERATION} {
			t.Run(http.StatusText(tc.status)+"/"+proto.String(), func(t *testing.T) {
				t.Parallel()
				u := answerUpstream(t, tc.status, body)
				req := contentEmbedRequest("a")
				req.Protocol, req.RawBody = proto, []byte(`{"model":"m","input":"a"}`)
				_, err := Adapter{}.Embed(context.Background(), embedCall(chatServe(t, u), req))
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

func TestEmbedTokenInputCannotBeTranslated(t *testing.T) {
	t.Parallel()
	u := answerUpstream(t, http.StatusOK, `{}`)
	req := contentEmbedRequest()
	req.TokenInput = true
	_, err := Adapter{}.Embed(context.Background(), embedCall(chatServe(t, u), req))
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Status != http.StatusBadRequest || pe.Retryable {
		t.Fatalf("err = %v, want a final 400", err)
	}
	if _, path, _ := u.request(); path != "" {
		t.Errorf("the upstream was called: %s", path)
	}
}
