package media

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	corev1 "modelgateway/gen/gateway/core/v1"
)

func TestJSONHead(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, family, body string
		want               *corev1.ForwardHead
	}{
		{"rerank minimal body (spec 4.3)", "rerank", `{"model":"rerank-v3.5","query":"q","documents":["a"],"top_n":1}`,
			&corev1.ForwardHead{Model: "rerank-v3.5"}},
		{"moderations without a model takes the default", "moderations", `{"input":"hi"}`,
			&corev1.ForwardHead{Model: "omni-moderation-latest"}},
		{"moderations with a null model takes the default", "moderations", `{"input":"hi","model":null}`,
			&corev1.ForwardHead{Model: "omni-moderation-latest"}},
		{"moderations with a model keeps it", "moderations", `{"input":"hi","model":"text-moderation-stable"}`,
			&corev1.ForwardHead{Model: "text-moderation-stable"}},
		{"image generation asking to stream", "images.generations", `{"model":"gpt-image-1","prompt":"p","stream":true}`,
			&corev1.ForwardHead{Model: "gpt-image-1", Stream: true}},
		{"stream false is no stream", "images.generations", `{"model":"gpt-image-1","prompt":"p","stream":false}`,
			&corev1.ForwardHead{Model: "gpt-image-1"}},
		{"speech with SSE events asks to stream", "audio.speech", `{"model":"gpt-4o-mini-tts","input":"hi","voice":"alloy","stream_format":"sse"}`,
			&corev1.ForwardHead{Model: "gpt-4o-mini-tts", Stream: true}},
		{"speech with raw audio does not", "audio.speech", `{"model":"tts-1","input":"hi","voice":"alloy","stream_format":"audio"}`,
			&corev1.ForwardHead{Model: "tts-1"}},
		{"stream_format means nothing elsewhere", "images.generations", `{"model":"m","prompt":"p","stream_format":"sse"}`,
			&corev1.ForwardHead{Model: "m"}},
		{"user is an optional parameter (spec 2.6)", "images.generations", `{"model":"m","prompt":"p","user":"u-1"}`,
			&corev1.ForwardHead{Model: "m", Parameters: []string{"user"}}},
		{"a null user is none", "rerank", `{"model":"m","user":null}`, &corev1.ForwardHead{Model: "m"}},
		{"keys match exactly, as upstream", "rerank", `{"Model":"x","model":"m"}`, &corev1.ForwardHead{Model: "m"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			core := &fakeCore{answer: jsonAnswer()}
			h := newHandler(t, tc.family, core.forward)
			rec := serve(t, h, newRequest([]byte(tc.body), "application/json", false))
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			tc.want.EndpointFamily = tc.family
			tc.want.Body = []byte(tc.body)
			tc.want.BodySize = int64(len(tc.body))
			if diff := cmp.Diff(tc.want, core.got.head, protocmp.Transform()); diff != "" {
				t.Errorf("head (-want +got):\n%s", diff)
			}
			if len(core.got.parts) != 0 || core.got.err != nil {
				t.Errorf("after the head: %v, %v; want io.EOF at once", core.got.parts, core.got.err)
			}
		})
	}
}

func TestJSONRejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, family, body, message string
	}{
		{"no model", "rerank", `{"query":"q","documents":["a"]}`, "model is required"},
		{"a null model", "images.generations", `{"model":null,"prompt":"p"}`, "model is required"},
		{"an empty model", "audio.speech", `{"model":"","input":"hi","voice":"alloy"}`, "model is required"},
		{"a model that is not a string", "rerank", `{"model":42}`, "model must be a string"},
		{"moderations with a model that is not a string", "moderations", `{"model":["a"],"input":"x"}`, "model must be a string"},
		{"not JSON", "rerank", `{"model":"m"`, "not valid JSON"},
		{"not an object", "moderations", `["hi"]`, "must be a JSON object"},
		{"an empty body", "images.generations", ``, "not valid JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			core := &fakeCore{}
			h := newHandler(t, tc.family, core.forward)
			rec := serve(t, h, newRequest([]byte(tc.body), "application/json", false))
			checkError(t, rec, 400, "invalid_request_error", tc.message)
			if core.called {
				t.Error("core was called")
			}
		})
	}
}

// spec 4.4: a wrong content type returns unsupported_content_type; the key is checked first.
func TestContentTypes(t *testing.T) {
	t.Parallel()
	json := `{"model":"m","prompt":"p"}`
	multipartBody := formString(t, file("image", "a.png", "image/png", 10, 1), field("model", "m"))
	cases := []struct {
		name, family, contentType, body, key string
		status                               int
		code                                 string
	}{
		{"JSON with a charset", "images.generations", "application/json; charset=utf-8", json, goodKey, 200, ""},
		{"JSON media types are case-insensitive", "rerank", "Application/JSON", `{"model":"m"}`, goodKey, 200, ""},
		{"text/plain on a JSON route", "images.generations", "text/plain", json, goodKey, 415, "unsupported_content_type"},
		{"no content type on a JSON route", "audio.speech", "", json, goodKey, 415, "unsupported_content_type"},
		{"a form on a JSON route", "rerank", formType, multipartBody, goodKey, 415, "unsupported_content_type"},
		{"a garbled content type", "rerank", "application/json; =", json, goodKey, 415, "unsupported_content_type"},
		{"a form", "images.variations", formType, multipartBody, goodKey, 200, ""},
		{"JSON on a multipart route", "images.edits", "application/json", json, goodKey, 415, "unsupported_content_type"},
		{"a form without a boundary", "images.edits", "multipart/form-data", multipartBody, goodKey, 415, "unsupported_content_type"},
		{"another multipart type", "images.variations", "multipart/mixed; boundary=" + boundary, multipartBody, goodKey, 415, "unsupported_content_type"},
		{"url-encoded form", "audio.transcriptions", "application/x-www-form-urlencoded", "model=whisper-1", goodKey, 415, "unsupported_content_type"},
		{"a bad key wins over a wrong content type", "audio.transcriptions", "text/plain", "x", "Bearer sk-bad", 401, "invalid_key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			core := &fakeCore{answer: jsonAnswer()}
			h := newHandler(t, tc.family, core.forward)
			r := newRequest([]byte(tc.body), tc.contentType, false)
			r.Header.Set("Authorization", tc.key)
			rec := serve(t, h, r)
			if tc.status == 200 {
				if rec.Code != 200 || !core.called {
					t.Errorf("status %d: %s", rec.Code, rec.Body)
				}
				return
			}
			checkError(t, rec, tc.status, tc.code, "")
			if core.called {
				t.Error("core was called")
			}
		})
	}
}
