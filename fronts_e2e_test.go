package main

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

// The refusals the embeddings, media and responses fronts test against a fake core, here
// through real sockets, the real core and the real database: each answers the spec envelope
// with the request id, reaches no upstream, and charges nothing (a delivered request after
// them is the one charge).

type refusal struct {
	name, path, contentType, body string
	key                           string // "" is the environment's key
	status                        int
	code, message                 string
}

func (g *genEnv) checkRefusals(t *testing.T, cases []refusal) {
	t.Helper()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := c.key
			if key == "" {
				key = g.key
			}
			ct := c.contentType
			if ct == "" {
				ct = "application/json"
			}
			id := fmt.Sprintf("refusal-%d", i)
			req, _ := http.NewRequest("POST", g.base+c.path, strings.NewReader(c.body))
			req.Header.Set("Content-Type", ct)
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("X-Request-Id", id)
			before := len(g.up.Calls())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			code, msg, rid := envelope(t, raw)
			if resp.StatusCode != c.status || code != c.code || !strings.Contains(msg, c.message) || rid != id {
				t.Errorf("%d %s %q (id %q), want %d %s containing %q", resp.StatusCode, code, msg, rid, c.status, c.code, c.message)
			}
			if n := len(g.up.Calls()) - before; n != 0 {
				t.Errorf("the upstream was called %d times", n)
			}
		})
	}
}

// form is a multipart body of the given fields; a value starting with "@" is a file part of
// that name with 100 bytes of content.
func form(t *testing.T, fields ...[2]string) (string, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, f := range fields {
		if strings.HasPrefix(f[1], "@") {
			fw, _ := w.CreateFormFile(f[0], f[1][1:])
			_, _ = fw.Write(bytes.Repeat([]byte{'a'}, 100))
			continue
		}
		_ = w.WriteField(f[0], f[1])
	}
	_ = w.Close()
	return b.String(), w.FormDataContentType()
}

func TestMediaAndEmbeddingRefusalsEndToEnd(t *testing.T) {
	g := startMedia(t)
	poor, _ := g.newProfile(t, "poor", "0")
	narrow := g.admin("POST", "/admin/v1/profiles/"+g.profileID+"/keys", `{"name":"n","allowed_endpoints":["*"],"allowed_models":["mod"]}`)["secret"].(string)
	noImage, noImageCT := form(t, [2]string{"model", "img"}, [2]string{"prompt", "p"})
	plainFile, plainFileCT := form(t, [2]string{"file", "not a file"}, [2]string{"model", "whisper"})
	// The file first: cut before the model is read, so nothing has gone upstream yet.
	cut, cutCT := form(t, [2]string{"image", "@a.png"}, [2]string{"model", "dalle"})
	many := "[" + strings.Repeat(`"a",`, 2048) + `"a"]`
	g.checkRefusals(t, []refusal{
		{name: "embeddings: an empty string", path: "/v1/embeddings", body: `{"model":"e-openai","input":""}`, status: 400, code: "invalid_request_error", message: "input must not be an empty string"},
		{name: "embeddings: a bad key wins over a bad body", path: "/v1/embeddings", body: `{"model":"e-openai","input":""}`, key: "nope", status: 401, code: "invalid_key"},
		{name: "embeddings: stream is refused", path: "/v1/embeddings", body: `{"model":"e-openai","input":"a","stream":true}`, status: 400, code: "streaming_not_supported"},
		{name: "embeddings: an unknown encoding_format", path: "/v1/embeddings", body: `{"model":"e-openai","input":"a","encoding_format":"int8"}`, status: 400, code: "invalid_request_error", message: "encoding_format"},
		{name: "embeddings: more than 2048 items", path: "/v1/embeddings", body: `{"model":"e-openai","input":` + many + `}`, status: 400, code: "invalid_request_error", message: "2048"},
		{name: "rerank: no model", path: "/v1/rerank", body: `{"query":"q","documents":["a"]}`, status: 400, code: "invalid_request_error", message: "model is required"},
		{name: "images: not JSON", path: "/v1/images/generations", body: `{"model":"dalle"`, status: 400, code: "invalid_request_error", message: "not valid JSON"},
		{name: "moderations: not an object", path: "/v1/moderations", body: `["hi"]`, status: 400, code: "invalid_request_error", message: "must be a JSON object"},
		{name: "rerank: no balance", path: "/v1/rerank", body: `{"model":"r-rerank","query":"q","documents":["a"]}`, key: poor, status: 402, code: "insufficient_balance"},
		{name: "images: a model the key may not use", path: "/v1/images/generations", body: `{"model":"dalle","prompt":"p"}`, key: narrow, status: 403, code: "model_not_allowed"},
		{name: "edits: no image", path: "/v1/images/edits", contentType: noImageCT, body: noImage, status: 400, code: "invalid_request_error", message: "image is required"},
		{name: "transcriptions: file as a plain field", path: "/v1/audio/transcriptions", contentType: plainFileCT, body: plainFile, status: 400, code: "invalid_request_error", message: "file is required"},
		{name: "variations: a form cut short before its model", path: "/v1/images/variations", contentType: cutCT, body: cut[:len(cut)/2], status: 400, code: "invalid_request_error", message: "EOF"},
		{name: "speech: a JSON route sent a form", path: "/v1/audio/speech", contentType: cutCT, body: cut, status: 415, code: "unsupported_content_type"},
	})
	// Nothing was charged: the one delivered request after them is the only charge.
	status, hdr, raw := g.post(t, "/v1/images/generations", nil, `{"model":"dalle","prompt":"a cat"}`)
	if status != 200 || hdr.Get("X-Request-Cost") != "3" {
		t.Fatalf("%d %q %s", status, hdr.Get("X-Request-Cost"), raw)
	}
	if b := g.settled(t, g.profileID, 1); !b.Equal(decimal.NewFromInt(997)) {
		t.Errorf("balance %s, want 997", b)
	}
}

func TestResponsesRefusalsEndToEnd(t *testing.T) {
	g := startGen(t)
	g.checkRefusals(t, []refusal{
		{name: "no input", path: "/v1/responses", body: `{"model":"m-openai"}`, status: 400, code: "invalid_request_error", message: "input is required"},
		{name: "a tool role", path: "/v1/responses", body: `{"model":"m-openai","input":[{"role":"tool","content":"x"}]}`, status: 400, code: "invalid_request_error", message: `role "tool"`},
		{name: "a zero output limit", path: "/v1/responses", body: `{"model":"m-openai","input":"x","max_output_tokens":0}`, status: 400, code: "invalid_request_error", message: "max_output_tokens"},
		{name: "a function tool without a name", path: "/v1/responses", body: `{"model":"m-anthropic","input":"x","tools":[{"type":"function","parameters":{}}]}`, status: 400, code: "invalid_request_error", message: "name is required"},
		{name: "stream that is not a boolean", path: "/v1/responses", body: `{"model":"m-gemini","input":"x","stream":"yes"}`, status: 400, code: "invalid_request_error"},
		{name: "a bad key wins over a bad body", path: "/v1/responses", body: `{"model":"m-openai"}`, key: "nope", status: 401, code: "invalid_key"},
		{name: "a model not priced on responses", path: "/v1/responses", body: `{"model":"m-money","input":"x"}`, status: 403, code: "pricing_unavailable"},
	})
	status, hdr, raw := g.post(t, "/v1/responses", nil, `{"model":"m-openai","input":"hi","max_output_tokens":20}`)
	if status != 200 || hdr.Get("X-Request-Cost") == "" {
		t.Fatalf("%d %s", status, raw)
	}
	if b := g.settled(t, g.profileID, 1); !b.Equal(decimal.NewFromInt(1000).Sub(decimal.RequireFromString(hdr.Get("X-Request-Cost")))) {
		t.Errorf("balance %s after one charge of %s", b, hdr.Get("X-Request-Cost"))
	}
}
