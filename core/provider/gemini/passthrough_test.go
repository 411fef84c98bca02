package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "modelgateway/gen/gateway/core/v1"
)

func geminiRequest(stream bool, body string) *corev1.GenerateRequest {
	return &corev1.GenerateRequest{
		Protocol: corev1.Protocol_PROTOCOL_CONTENT_GENERATION, EndpointFamily: "content.generate",
		Model: "flash", Stream: stream, RawBody: []byte(body),
	}
}

// sseChunks splits a recorded stream into its data payloads.
func sseChunks(raw []byte) []string {
	var out []string
	for _, ev := range strings.Split(string(raw), "\r\n\r\n") {
		if d, ok := strings.CutPrefix(ev, "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

func TestPassthroughStream(t *testing.T) {
	t.Parallel()
	const body = `{"model":"models/flash","contents":[{"parts":[{"text":"Hi"}]}],"safetySettings":[{"category":"HARM_CATEGORY_HATE_SPEECH","threshold":"OFF"}],"futureField":{"x":1}}`
	rec := fixture(t, "text_thoughts.sse")
	var want []string
	want = append(want, `start id="" model=flash passthrough=true`)
	for _, c := range sseChunks(rec) {
		// The upstream model name becomes the public one; nothing else changes.
		want = append(want, "native "+strings.Replace(c, `"modelVersion": "gemini-2.5-flash"`, `"modelVersion": "flash"`, 1))
	}
	want = append(want, `usage in=40 cached=60 write=0 out=50 reasoning=30 reliable=true`)
	for _, rp := range replays {
		t.Run(rp.name, func(t *testing.T) {
			t.Parallel()
			srv, got := upstream(t, 200, rec, rp.oneByte)
			s, err := Adapter{}.Generate(context.Background(), newCall(srv.URL, geminiRequest(true, body)))
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			events, err := drain(t, s)
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if diff := cmp.Diff(want, events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			path, query, key, sent := got.get()
			if path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || query != "alt=sse" || key != "secret" {
				t.Errorf("upstream saw %s?%s key %q", path, query, key)
			}
			wantBody := `{"contents":[{"parts":[{"text":"Hi"}]}],"safetySettings":[{"category":"HARM_CATEGORY_HATE_SPEECH","threshold":"OFF"}],"futureField":{"x":1}}`
			if string(sent) != wantBody {
				t.Errorf("upstream body = %s\nwant the client's body without its model: %s", sent, wantBody)
			}
		})
	}
}

func TestPassthroughSingle(t *testing.T) {
	t.Parallel()
	answer := `{"candidates": [{"content": {"parts": [{"text": "Hello"}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 5,"candidatesTokenCount": 1,"totalTokenCount": 6},"modelVersion": "gemini-2.5-flash-001","responseId": "r"}`
	srv, got := upstream(t, 200, []byte(answer), false)
	s, err := Adapter{}.Generate(context.Background(), newCall(srv.URL, geminiRequest(false, `{"contents":[{"parts":[{"text":"Hi"}]}]}`)))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	events, err := drain(t, s)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`start id="" model=flash passthrough=true`,
		"native " + answer, // a dated version is not the upstream model name: left alone
		`usage in=5 cached=0 write=0 out=1 reasoning=0 reliable=true`,
	}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if path, query, _, _ := got.get(); path != "/v1beta/models/gemini-2.5-flash:generateContent" || query != "" {
		t.Errorf("upstream saw %s?%s", path, query)
	}
}

func TestTranslatedSingle(t *testing.T) {
	t.Parallel()
	answer := `{"candidates": [{"content": {"parts": [{"text": "Thinking it over","thought": true},{"text": "Sunny."},{"functionCall": {"id": "fc-1","name": "log","args": {}},"thoughtSignature": "c2ln"}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 10,"candidatesTokenCount": 4,"thoughtsTokenCount": 6,"totalTokenCount": 20},"modelVersion": "gemini-2.5-flash","responseId": "resp-9"}`
	srv, _ := upstream(t, 200, []byte(answer), false)
	s, err := Adapter{}.Generate(context.Background(), newCall(srv.URL, chatRequest(false)))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	events, err := drain(t, s)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`start id="resp-9" model=flash passthrough=false`,
		`reasoning "Thinking it over" sig=""`,
		`text Sunny.`,
		`tool 0 fc-1 log sig="c2ln"`,
		`args 0 {}`,
		`finish FINISH_REASON_TOOL_CALLS`,
		`usage in=10 cached=0 write=0 out=10 reasoning=6 reliable=true`,
	}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestPublicModelVersion(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"Google's spacing", `{"a":1,"modelVersion": "up","b":2}`, `{"a":1,"modelVersion": "flash","b":2}`},
		{"compact", `{"modelVersion":"up"}`, `{"modelVersion":"flash"}`},
		{"a longer version is left alone", `{"modelVersion": "up-001"}`, `{"modelVersion": "up-001"}`},
		{"absent", `{"candidates":[]}`, `{"candidates":[]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := string(publicModelVersion([]byte(tc.in), "up", "flash")); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestCountTokens(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		req      *corev1.GenerateRequest
		wantBody string
	}{
		{
			name:     "a client of this protocol is passed through with the model named inside",
			req:      geminiRequest(false, `{"model":"models/flash","generateContentRequest":{"model":"models/flash","contents":[{"parts":[{"text":"Hi"}]}],"tools":[{"googleSearch":{}}]}}`),
			wantBody: `{"generateContentRequest":{"model":"models/gemini-2.5-flash","contents":[{"parts":[{"text":"Hi"}]}],"tools":[{"googleSearch":{}}]}}`,
		},
		{
			name:     "contents alone pass through unchanged",
			req:      geminiRequest(false, `{"contents":[{"parts":[{"text":"Hi"}]}]}`),
			wantBody: `{"contents":[{"parts":[{"text":"Hi"}]}]}`,
		},
		{
			name:     "another protocol without system or tools counts contents",
			req:      chatRequest(false),
			wantBody: `{"contents":[{"role":"user","parts":[{"text":"Hi"}]}]}`,
		},
		{
			name: "another protocol with a system prompt uses the generateContentRequest form",
			req: func() *corev1.GenerateRequest {
				r := chatRequest(false)
				r.System = "Be brief."
				return r
			}(),
			wantBody: `{"generateContentRequest":{"model":"models/gemini-2.5-flash","contents":[{"role":"user","parts":[{"text":"Hi"}]}],"systemInstruction":{"parts":[{"text":"Be brief."}]}}}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, got := upstream(t, 200, []byte(`{"totalTokens": 31,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 31}]}`), false)
			n, err := Adapter{}.CountTokens(context.Background(), newCall(srv.URL, tc.req))
			if err != nil || n != 31 {
				t.Fatalf("CountTokens = %d, %v; want 31", n, err)
			}
			path, _, key, body := got.get()
			if path != "/v1beta/models/gemini-2.5-flash:countTokens" || key != "secret" {
				t.Errorf("upstream saw %s key %q", path, key)
			}
			if !jsonEqual(body, []byte(tc.wantBody)) {
				t.Errorf("upstream body = %s\nwant %s", body, tc.wantBody)
			}
		})
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return cmp.Equal(x, y)
}
