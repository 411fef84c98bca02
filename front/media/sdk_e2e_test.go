package media_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/shopspring/decimal"
	"google.golang.org/genai"

	"modelgateway/core/gatewaytest"
)

// charged checks the cost header against the expected cost and returns it.
func charged(t *testing.T, h http.Header, want decimal.Decimal) {
	t.Helper()
	got, err := decimal.NewFromString(h.Get("X-Request-Cost"))
	if err != nil || !got.Equal(want) {
		t.Errorf("x-request-cost = %q, want %s", h.Get("X-Request-Cost"), want)
	}
	if h.Get("X-Request-Currency") != "RUB" {
		t.Errorf("x-request-currency = %q", h.Get("X-Request-Currency"))
	}
}

// Either embedding client reaches either upstream kind, the same text gets the same vector
// whichever way it went, and every call is charged by its input tokens (measured locally when
// the upstream reports none).
func TestEmbeddingsEveryClientEveryUpstream(t *testing.T) {
	g := gatewaytest.StartMedia(t, gatewaytest.Options{})
	ctx := context.Background()
	texts := []string{"the quick brown fox", "jumps over the lazy dog"}
	vectors := map[string][][]float32{}
	var wantTotal decimal.Decimal
	for _, model := range []string{"e-openai", "e-gemini"} {
		var resp *http.Response
		oc := openaiClient(g)
		r, err := oc.Embeddings.New(ctx, openai.EmbeddingNewParams{
			Model: model, Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		}, option.WithResponseInto(&resp))
		if err != nil {
			t.Fatalf("%s via openai-go: %v", model, err)
		}
		if r.Model != model || len(r.Data) != 2 || r.Data[1].Index != 1 || r.Usage.PromptTokens <= 0 {
			t.Fatalf("%s: answer %+v", model, r)
		}
		want := gatewaytest.Cost(r.Usage.PromptTokens, "1000")
		charged(t, resp.Header, want)
		wantTotal = wantTotal.Add(want)
		for _, d := range r.Data {
			v := make([]float32, len(d.Embedding))
			for i, f := range d.Embedding {
				v[i] = float32(f)
			}
			vectors["openai "+model] = append(vectors["openai "+model], v)
		}

		gc, err := genaiClient(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		er, err := gc.Models.EmbedContent(ctx, model, []*genai.Content{genai.NewContentFromText(texts[0], genai.RoleUser), genai.NewContentFromText(texts[1], genai.RoleUser)}, nil)
		if err != nil {
			t.Fatalf("%s via genai: %v", model, err)
		}
		if len(er.Embeddings) != 2 {
			t.Fatalf("%s via genai: %d embeddings", model, len(er.Embeddings))
		}
		for _, e := range er.Embeddings {
			vectors["genai "+model] = append(vectors["genai "+model], e.Values)
		}
	}
	ref := vectors["openai e-openai"]
	for name, vs := range vectors {
		for i := range vs {
			if len(vs[i]) == 0 || fmt.Sprint(vs[i]) != fmt.Sprint(ref[i]) {
				t.Errorf("%s: vector %d = %v, want %v", name, i, vs[i], ref[i])
			}
		}
	}
	// The upstream got the right protocol each time: four calls, two per kind.
	var openaiCalls, geminiCalls int
	for _, c := range g.Up.Calls() {
		switch {
		case c.Path == "/v1/embeddings":
			openaiCalls++
			if m := jsonField(t, c.Body, "model"); m != "text-embedding-3-small" {
				t.Errorf("upstream model %q", m)
			}
		case strings.HasSuffix(c.Path, "text-embedding-004:batchEmbedContents"):
			geminiCalls++
		}
	}
	if openaiCalls != 2 || geminiCalls != 2 {
		t.Errorf("upstream calls: %d openai, %d gemini; want 2 and 2", openaiCalls, geminiCalls)
	}
	balance := gatewaytest.Settled(t, g.Pool(), g.ProfileID, 4)
	if !strings.HasPrefix(balance.String(), "99") {
		t.Errorf("balance %s after four embeddings", balance)
	}
}

// The Node SDK asks for base64 by default and decodes float32 little-endian: a translated
// embedding must come back in that form, bit for bit the floats of the float form.
func TestEmbeddingBase64AcrossProtocols(t *testing.T) {
	g := gatewaytest.StartMedia(t, gatewaytest.Options{})
	for _, model := range []string{"e-gemini", "e-openai"} {
		_, _, floats := g.Post("/v1/embeddings", nil, `{"model":"`+model+`","input":"hello"}`)
		status, _, b64 := g.Post("/v1/embeddings", nil, `{"model":"`+model+`","input":"hello","encoding_format":"base64"}`)
		if status != 200 {
			t.Fatalf("%s: %d %s", model, status, b64)
		}
		var f struct {
			Data []struct{ Embedding []float64 }
		}
		var b struct{ Data []struct{ Embedding string } }
		if err := json.Unmarshal(floats, &f); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b64, &b); err != nil {
			t.Fatalf("%s: base64 answer %s: %v", model, b64, err)
		}
		raw, err := base64.StdEncoding.DecodeString(b.Data[0].Embedding)
		if err != nil || len(raw) != 4*len(f.Data[0].Embedding) {
			t.Fatalf("%s: base64 of %d bytes for %d floats (%v)", model, len(raw), len(f.Data[0].Embedding), err)
		}
		for i, want := range f.Data[0].Embedding {
			got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			if got != float32(want) {
				t.Fatalf("%s: dimension %d = %v, want %v", model, i, got, want)
			}
		}
	}
}

func jsonField(t *testing.T, body []byte, field string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("upstream body %q: %v", body, err)
	}
	s, _ := m[field].(string)
	return s
}

func TestRerankAndModeration(t *testing.T) {
	g := gatewaytest.StartMedia(t, gatewaytest.Options{})
	status, h, raw := g.Post("/v1/rerank", nil, `{"model":"r-rerank","query":"capital of France","documents":["Berlin is in Germany.","Paris is the capital of France."],"top_n":1,"return_documents":true}`)
	if status != 200 {
		t.Fatalf("rerank: %d %s", status, raw)
	}
	var rr struct {
		Model   string
		Results []struct {
			Index          int
			RelevanceScore float64 `json:"relevance_score"`
			Document       struct{ Text string }
		}
		Usage struct {
			TotalTokens int64 `json:"total_tokens"`
		}
	}
	if err := json.Unmarshal(raw, &rr); err != nil {
		t.Fatal(err)
	}
	if rr.Model != "r-rerank" || len(rr.Results) != 1 || rr.Results[0].Index != 1 || rr.Results[0].Document.Text != "Paris is the capital of France." {
		t.Errorf("rerank answer %s", raw)
	}
	charged(t, h, gatewaytest.Cost(rr.Usage.TotalTokens, "1000"))
	if c := g.Up.Last(t); c.Path != "/v1/rerank" || jsonField(t, c.Body, "model") != "rerank-v3.5" || c.Header.Get("Authorization") != "Bearer "+gatewaytest.UpstreamKey {
		t.Errorf("upstream got %s model %q auth %q", c.Path, jsonField(t, c.Body, "model"), c.Header.Get("Authorization"))
	}

	var resp *http.Response
	oc := openaiClient(g)
	mr, err := oc.Moderations.New(context.Background(), openai.ModerationNewParams{
		Model: "mod", Input: openai.ModerationNewParamsInputUnion{OfStringArray: []string{"a kind word", "I will kill the process"}},
	}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if mr.Model != "mod" || len(mr.Results) != 2 || mr.Results[0].Flagged || !mr.Results[1].Flagged || !mr.Results[1].Categories.Violence {
		t.Errorf("moderation answer %+v", mr)
	}
	charged(t, resp.Header, decimal.Zero) // priced at zero: charged, for nothing
	gatewaytest.Settled(t, g.Pool(), g.ProfileID, 2)
}

// pngOf is a real PNG image.
func pngOf(t *testing.T, size int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	img.Set(0, 0, color.RGBA{1, 2, 3, 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// formOf reads the upload the upstream received: every part's name and value (files by
// their sha256).
func formOf(t *testing.T, c gatewaytest.Call) map[string]string {
	t.Helper()
	_, params, err := mime.ParseMediaType(c.Header.Get("Content-Type"))
	if err != nil {
		t.Fatalf("upstream content type %q", c.Header.Get("Content-Type"))
	}
	out := map[string]string{}
	mr := multipart.NewReader(bytes.NewReader(c.Body), params["boundary"])
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		v, _ := io.ReadAll(p)
		if p.FileName() != "" {
			out[p.FormName()] = fmt.Sprintf("%s sha256:%x", p.FileName(), sha256.Sum256(v))
		} else {
			out[p.FormName()] = string(v)
		}
	}
}

func TestImagesThroughTheSDK(t *testing.T) {
	g := gatewaytest.StartMedia(t, gatewaytest.Options{})
	ctx := context.Background()
	c := openaiClient(g)

	var resp *http.Response
	gen, err := c.Images.Generate(ctx, openai.ImageGenerateParams{Model: "img", Prompt: "a red square", N: openai.Int(2)}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if len(gen.Data) != 2 || gen.Usage.InputTokens <= 0 || gen.Usage.OutputTokens <= 0 {
		t.Fatalf("generation %+v", gen)
	}
	if _, err := png.Decode(base64.NewDecoder(base64.StdEncoding, strings.NewReader(gen.Data[0].B64JSON))); err != nil {
		t.Errorf("b64_json is not a PNG: %v", err)
	}
	charged(t, resp.Header, gatewaytest.Cost(gen.Usage.InputTokens, "10").Add(gatewaytest.Cost(gen.Usage.OutputTokens, "40")))

	// The SDK writes the image before the model: the gateway stages it, decides on the model,
	// then sends the form on with the upstream model and the image bytes intact.
	img := pngOf(t, 64)
	edit, err := c.Images.Edit(ctx, openai.ImageEditParams{
		Model: "img", Prompt: "make it blue",
		Image: openai.ImageEditParamsImageUnion{OfFileArray: []io.Reader{openai.File(bytes.NewReader(img), "in.png", "image/png")}},
	}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	charged(t, resp.Header, gatewaytest.Cost(edit.Usage.InputTokens, "10").Add(gatewaytest.Cost(edit.Usage.OutputTokens, "40")))
	form := formOf(t, g.Up.Last(t))
	if form["model"] != "gpt-image-1" || form["prompt"] != "make it blue" || form["image[]"] != fmt.Sprintf("in.png sha256:%x", sha256.Sum256(img)) {
		t.Errorf("upstream form %v", form)
	}

	vr, err := c.Images.NewVariation(ctx, openai.ImageNewVariationParams{Model: "dalle", Image: openai.File(bytes.NewReader(img), "v.png", "image/png")}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if len(vr.Data) != 1 {
		t.Errorf("variation %+v", vr)
	}
	charged(t, resp.Header, decimal.RequireFromString("3"))
	gatewaytest.Settled(t, g.Pool(), g.ProfileID, 3)
}

// wavOf is a real WAV file: a second of a 440 Hz tone, 16 kHz mono 16-bit.
func wavOf(seconds int) []byte {
	const rate = 16000
	n := rate * seconds
	var b bytes.Buffer
	w := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	w(uint32(36 + 2*n))
	b.WriteString("WAVEfmt ")
	w(uint32(16))
	w(uint16(1))
	w(uint16(1))
	w(uint32(rate))
	w(uint32(2 * rate))
	w(uint16(2))
	w(uint16(16))
	b.WriteString("data")
	w(uint32(2 * n))
	for i := range n {
		w(int16(8000 * math.Sin(2*math.Pi*440*float64(i)/rate)))
	}
	return b.Bytes()
}

func TestAudioThroughTheSDK(t *testing.T) {
	g := gatewaytest.StartMedia(t, gatewaytest.Options{})
	ctx := context.Background()
	c := openaiClient(g)

	speech, err := c.Audio.Speech.New(ctx, openai.AudioSpeechNewParams{Model: "tts", Input: "hello there general", Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("alloy")}})
	if err != nil {
		t.Fatal(err)
	}
	audio, err := io.ReadAll(speech.Body)
	speech.Body.Close()
	if err != nil || len(audio) == 0 || speech.Header.Get("Content-Type") != "audio/mpeg" {
		t.Fatalf("speech: %d bytes, %q, %v", len(audio), speech.Header.Get("Content-Type"), err)
	}
	// The audio is the upstream's, byte for byte.
	direct, err := http.Post(g.Up.URL+"/v1/audio/speech", "application/json", strings.NewReader(`{"model":"tts-1","input":"hello there general","voice":"alloy"}`))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := io.ReadAll(direct.Body)
	direct.Body.Close()
	if !bytes.Equal(audio, want) {
		t.Errorf("speech: %d bytes differ from the upstream's %d", len(audio), len(want))
	}

	wav := wavOf(1)
	var resp *http.Response
	tr, err := c.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{Model: "stt", File: openai.File(bytes.NewReader(wav), "tone.wav", "audio/wav")}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Text == "" || tr.Usage.InputTokens <= 0 {
		t.Fatalf("transcription %+v", tr)
	}
	charged(t, resp.Header, gatewaytest.Cost(tr.Usage.InputTokens, "100").Add(gatewaytest.Cost(tr.Usage.OutputTokens, "400")))
	form := formOf(t, g.Up.Last(t))
	if form["model"] != "gpt-4o-transcribe" || form["file"] != fmt.Sprintf("tone.wav sha256:%x", sha256.Sum256(wav)) {
		t.Errorf("upstream form %v", form)
	}

	// Text formats pass through as text; whisper is priced per request.
	tl, err := c.Audio.Translations.New(ctx, openai.AudioTranslationNewParams{Model: "whisper", File: openai.File(bytes.NewReader(wav), "tone.wav", "audio/wav")}, option.WithResponseInto(&resp))
	if err != nil || tl.Text == "" {
		t.Fatalf("translation %+v %v", tl, err)
	}
	charged(t, resp.Header, decimal.RequireFromString("0.25"))
	gatewaytest.Settled(t, g.Pool(), g.ProfileID, 3)
}

func openaiClient(g *gatewaytest.Gen, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(g.Base + "/v1/"), option.WithAPIKey(g.Key), option.WithMaxRetries(0)}, opts...)...)
}

func genaiClient(ctx context.Context, g *gatewaytest.Gen) (*genai.Client, error) {
	return genai.NewClient(ctx, &genai.ClientConfig{APIKey: g.Key, Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: g.Base + "/"}})
}
