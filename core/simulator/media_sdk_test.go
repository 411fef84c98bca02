package simulator

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// The official openai-go SDK, pointed at the simulator, must read every media answer.

func TestOpenAIModerations(t *testing.T) {
	t.Parallel()
	_, c := openaiClient(t, Options{})
	res, err := c.Moderations.New(context.Background(), openai.ModerationNewParams{
		Input: openai.ModerationNewParamsInputUnion{OfStringArray: []string{"I will kill the weeds", "a sunny day", "hello #sim:flag=hate"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Model != "omni-moderation-latest" || !strings.HasPrefix(res.ID, "modr-") || len(res.Results) != 3 {
		t.Fatalf("moderation %s", res.RawJSON())
	}
	violent, calm, hateful := res.Results[0], res.Results[1], res.Results[2]
	if !violent.Flagged || !violent.Categories.Violence || violent.Categories.Hate || violent.CategoryScores.Violence < 0.9 {
		t.Errorf("the kill input: %s", violent.RawJSON())
	}
	if calm.Flagged || calm.Categories.Violence || calm.CategoryScores.Violence > 0.01 {
		t.Errorf("the calm input: %s", calm.RawJSON())
	}
	if !hateful.Flagged || !hateful.Categories.Hate || hateful.Categories.Violence {
		t.Errorf("the flag directive: %s", hateful.RawJSON())
	}
	// Every result names all 13 categories in each of its three maps.
	var raw struct {
		Results []map[string]json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal([]byte(res.RawJSON()), &raw); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"categories", "category_scores", "category_applied_input_types"} {
		var m map[string]any
		if err := json.Unmarshal(raw.Results[0][key], &m); err != nil || len(m) != 13 {
			t.Errorf("%s has %d keys: %s", key, len(m), raw.Results[0][key])
		}
	}

	// Text and an image form one input; image-only input applies no text category.
	img := openai.ModerationMultiModalInputParamOfImageURL(openai.ModerationImageURLInputImageURLParam{URL: "https://example.com/a.png"})
	res, err = c.Moderations.New(context.Background(), openai.ModerationNewParams{
		Model: openai.ModerationModelOmniModerationLatest,
		Input: openai.ModerationNewParamsInputUnion{OfModerationMultiModalArray: []openai.ModerationMultiModalInputUnionParam{
			openai.ModerationMultiModalInputParamOfText("look"), img,
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	applied := res.Results[0].CategoryAppliedInputTypes
	if len(res.Results) != 1 || fmt.Sprint(applied.Violence) != "[text image]" || fmt.Sprint(applied.Harassment) != "[text]" {
		t.Errorf("text and image: %s", res.RawJSON())
	}
	res, err = c.Moderations.New(context.Background(), openai.ModerationNewParams{
		Input: openai.ModerationNewParamsInputUnion{OfModerationMultiModalArray: []openai.ModerationMultiModalInputUnionParam{img}},
	})
	if err != nil {
		t.Fatal(err)
	}
	applied = res.Results[0].CategoryAppliedInputTypes
	if fmt.Sprint(applied.Violence) != "[image]" || len(applied.Harassment) != 0 || applied.Harassment == nil {
		t.Errorf("image only: %s", res.RawJSON())
	}
}

// The whole body of one answer, key order included, reviewed by eye.
func TestModerationsGolden(t *testing.T) {
	t.Parallel()
	_, url := start(t, Options{})
	golden(t, "moderations.json", mustPost(t, url, "/v1/moderations", `{"input":"they kill time"}`))
}

// decodePicture decodes a PNG or JPEG and returns its size.
func decodePicture(t *testing.T, b []byte) image.Point {
	t.Helper()
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a picture: %v", err)
	}
	return img.Bounds().Size()
}

func b64Picture(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOpenAIImagesGenerate(t *testing.T) {
	t.Parallel()
	_, c := openaiClient(t, Options{})
	ctx := context.Background()

	// dall-e-3 answers a URL the simulator serves, and a revised prompt.
	res, err := c.Images.Generate(ctx, openai.ImageGenerateParams{
		Prompt: "a red fox", Model: openai.ImageModelDallE3, Size: openai.ImageGenerateParamsSize1024x1792,
		ResponseFormat: openai.ImageGenerateParamsResponseFormatURL,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 1 || res.Data[0].URL == "" || res.Data[0].RevisedPrompt == "" || res.Data[0].B64JSON != "" || res.Usage.TotalTokens != 0 {
		t.Fatalf("dall-e-3: %s", res.RawJSON())
	}
	resp, err := http.Get(res.Data[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	pic, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Type") != "image/png" || decodePicture(t, pic) != image.Pt(9, 16) {
		t.Errorf("the picture behind the URL: %s, %d bytes", resp.Header.Get("Content-Type"), len(pic))
	}

	// dall-e-2 is the default model, and answers a URL by default.
	res, err = c.Images.Generate(ctx, openai.ImageGenerateParams{Prompt: "a red fox"})
	if err != nil || !strings.Contains(res.Data[0].URL, "/sim/images/") || res.Data[0].RevisedPrompt != "" {
		t.Fatalf("dall-e-2 by default: %v %s", err, res.RawJSON())
	}

	// A GPT image model always answers base64, with usage.
	params := openai.ImageGenerateParams{Prompt: "two cats", Model: openai.ImageModelGPTImage1, N: openai.Int(2), Size: openai.ImageGenerateParamsSize1536x1024}
	res, err = c.Images.Generate(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 2 || res.Data[0].URL != "" || res.Data[0].B64JSON == res.Data[1].B64JSON {
		t.Fatalf("gpt-image-1: %s", res.RawJSON())
	}
	for _, d := range res.Data {
		if got := decodePicture(t, b64Picture(t, d.B64JSON)); got != image.Pt(16, 11) {
			t.Errorf("1536x1024 drawn as %v", got)
		}
	}
	// "two cats" = 2 text tokens; medium quality at 1536x1024 is 1584 tokens a picture.
	u := res.Usage
	if u.InputTokens != 2 || u.InputTokensDetails.TextTokens != 2 || u.InputTokensDetails.ImageTokens != 0 ||
		u.OutputTokens != 2*1584 || u.TotalTokens != u.InputTokens+u.OutputTokens {
		t.Errorf("usage %s", u.RawJSON())
	}
	if res.Size != "1536x1024" || res.OutputFormat != "png" || res.Quality != "medium" || res.Background != "opaque" {
		t.Errorf("top-level fields %s", res.RawJSON())
	}
	again, err := c.Images.Generate(ctx, params)
	if err != nil || again.Data[0].B64JSON != res.Data[0].B64JSON {
		t.Errorf("the same prompt drew a different picture (%v)", err)
	}

	// output_format jpeg is a real JPEG.
	res, err = c.Images.Generate(ctx, openai.ImageGenerateParams{Prompt: "x", Model: openai.ImageModelGPTImage1Mini,
		OutputFormat: openai.ImageGenerateParamsOutputFormatJPEG, Quality: openai.ImageGenerateParamsQualityLow})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jpeg.Decode(bytes.NewReader(b64Picture(t, res.Data[0].B64JSON))); err != nil || res.Usage.OutputTokens != 272 {
		t.Errorf("jpeg: %v, usage %s", err, res.Usage.RawJSON())
	}

	_, err = c.Images.Generate(ctx, openai.ImageGenerateParams{Prompt: "x", Model: openai.ImageModelDallE3, N: openai.Int(2)})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "n" {
		t.Errorf("dall-e-3 with n=2: %v", err)
	}
}

func TestOpenAIImagesEditAndVariation(t *testing.T) {
	t.Parallel()
	sim, c := openaiClient(t, Options{})
	ctx := context.Background()
	first, second, mask := testPNG(t, 4, 4), testPNG(t, 8, 8), testPNG(t, 4, 4)
	res, err := c.Images.Edit(ctx, openai.ImageEditParams{
		Prompt: "make it blue",
		Model:  openai.ImageModelGPTImage1,
		Image: openai.ImageEditParamsImageUnion{OfFileArray: []io.Reader{
			openai.File(bytes.NewReader(first), "first.png", "image/png"),
			openai.File(bytes.NewReader(second), "second.png", "image/png"),
		}},
		Mask: openai.File(bytes.NewReader(mask), "mask.png", "image/png"),
		Size: openai.ImageEditParamsSize1024x1024,
	})
	if err != nil {
		t.Fatal(err)
	}
	if decodePicture(t, b64Picture(t, res.Data[0].B64JSON)) != image.Pt(16, 16) {
		t.Errorf("edit: %s", res.RawJSON())
	}
	total := int64(len(first) + len(second) + len(mask))
	if d := res.Usage.InputTokensDetails; d.ImageTokens != (total+1023)/1024 || d.TextTokens != 3 || res.Usage.InputTokens != d.ImageTokens+d.TextTokens {
		t.Errorf("edit usage %s for %d uploaded bytes", res.Usage.RawJSON(), total)
	}
	files := map[string]FormPart{}
	for _, p := range sim.LastForm() {
		if p.File {
			files[p.Filename] = p
		}
	}
	for name, data := range map[string][]byte{"first.png": first, "second.png": second, "mask.png": mask} {
		if p := files[name]; p.Size != int64(len(data)) || p.SHA256 != sha(data) || p.ContentType != "image/png" {
			t.Errorf("%s recorded as %+v", name, p)
		}
	}
	if files["first.png"].Name != "image[]" || files["mask.png"].Name != "mask" {
		t.Errorf("part names %+v", files)
	}

	vres, err := c.Images.NewVariation(ctx, openai.ImageNewVariationParams{
		Image: openai.File(bytes.NewReader(first), "first.png", "image/png"), N: openai.Int(2),
		Size: openai.ImageNewVariationParamsSize256x256, ResponseFormat: openai.ImageNewVariationParamsResponseFormatB64JSON,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(vres.Data) != 2 || vres.Usage.TotalTokens != 0 {
		t.Fatalf("variation: %s", vres.RawJSON())
	}
	for _, d := range vres.Data {
		if _, err := png.Decode(bytes.NewReader(b64Picture(t, d.B64JSON))); err != nil {
			t.Errorf("variation picture: %v", err)
		}
	}
	_, err = c.Images.NewVariation(ctx, openai.ImageNewVariationParams{Image: openai.File(strings.NewReader("GIF89a"), "a.gif", "image/gif")})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "invalid_image_format" {
		t.Errorf("variation of a GIF: %v", err)
	}
}

func TestOpenAISpeech(t *testing.T) {
	t.Parallel()
	_, c := openaiClient(t, Options{})
	const input = "one two three four" // 4 words: 4 chunks of about 1 KiB
	cases := []struct {
		format      openai.AudioSpeechNewParamsResponseFormat
		contentType string
		size        int
		prefix      string
	}{
		{"", "audio/mpeg", 4 * 11 * 96, "\xff\xf3\x44\xc0"},
		{openai.AudioSpeechNewParamsResponseFormatOpus, "audio/opus", 4 * 1024, "OggS"},
		{openai.AudioSpeechNewParamsResponseFormatAAC, "audio/aac", 4 * 1024, "\xff\xf1"},
		{openai.AudioSpeechNewParamsResponseFormatFLAC, "audio/flac", 4 * 1024, "fLaC"},
		{openai.AudioSpeechNewParamsResponseFormatWAV, "audio/wav", 44 + 4*1024, "RIFF"},
		{openai.AudioSpeechNewParamsResponseFormatPCM, "audio/pcm", 4 * 1024, ""},
	}
	for _, tc := range cases {
		resp, err := c.Audio.Speech.New(context.Background(), openai.AudioSpeechNewParams{
			Model: openai.SpeechModelTTS1, Input: input, Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("alloy")},
			ResponseFormat: tc.format,
		})
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.Header.Get("Content-Type") != tc.contentType || len(body) != tc.size || !bytes.HasPrefix(body, []byte(tc.prefix)) || resp.ContentLength != -1 {
			t.Errorf("%q: %s, %d bytes (length %d), starts %q", tc.format, resp.Header.Get("Content-Type"), len(body), resp.ContentLength, body[:8])
		}
		if tc.format == openai.AudioSpeechNewParamsResponseFormatWAV {
			if string(body[8:16]) != "WAVEfmt " || binary.LittleEndian.Uint32(body[24:]) != 24000 ||
				binary.LittleEndian.Uint32(body[40:]) != uint32(len(body)-44) || binary.LittleEndian.Uint32(body[4:]) != uint32(len(body)-8) {
				t.Errorf("wav header % x", body[:44])
			}
		}
	}
	_, err := c.Audio.Speech.New(context.Background(), openai.AudioSpeechNewParams{Model: openai.SpeechModelTTS1, Input: "hi"})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "voice" {
		t.Errorf("speech without voice: %v", err)
	}
}

func TestOpenAISpeechEvents(t *testing.T) {
	t.Parallel()
	_, url := start(t, Options{})
	raw := mustPost(t, url, "/v1/audio/speech", `{"model":"gpt-4o-mini-tts","input":"one two","voice":{"id":"voice_1"},"response_format":"pcm","stream_format":"sse"}`)
	evs := events(t, raw)
	if len(evs) != 3 {
		t.Fatalf("%d events:\n%s", len(evs), raw)
	}
	var delta struct{ Type, Audio string }
	if err := json.Unmarshal(evs[0].Data, &delta); err != nil || delta.Type != "speech.audio.delta" || len(b64Picture(t, delta.Audio)) != 1024 {
		t.Errorf("delta %s", evs[0].Data)
	}
	if want := `{"type":"speech.audio.done","usage":{"input_tokens":2,"output_tokens":2,"total_tokens":4}}`; string(evs[2].Data) != want {
		t.Errorf("done %s, want %s", evs[2].Data, want)
	}
}

// transcribe sends a one-second WAV to the transcription route through the SDK.
func transcribeParams(model openai.AudioModel, format openai.AudioResponseFormat) openai.AudioTranscriptionNewParams {
	return openai.AudioTranscriptionNewParams{
		File: openai.File(bytes.NewReader(testWAV(1)), "speech.wav", "audio/wav"), Model: model, ResponseFormat: format,
	}
}

func TestOpenAITranscriptions(t *testing.T) {
	t.Parallel()
	_, c := openaiClient(t, Options{Words: 4})
	ctx := context.Background()
	size := len(testWAV(1))
	prefix := fmt.Sprintf("Transcribed %d bytes of speech.wav: ", size)

	res, err := c.Audio.Transcriptions.New(ctx, transcribeParams(openai.AudioModelGPT4oTranscribe, ""))
	if err != nil {
		t.Fatal(err)
	}
	tr := res.AsTranscription()
	// 5 words of prefix and 4 drawn from the file; one second is 10 audio tokens.
	if !strings.HasPrefix(tr.Text, prefix) || len(strings.Fields(tr.Text)) != 9 {
		t.Errorf("text %q", tr.Text)
	}
	if u := tr.Usage; u.Type != "tokens" || u.InputTokens != 10 || u.InputTokenDetails.AudioTokens != 10 || u.OutputTokens != 9 || u.TotalTokens != 19 {
		t.Errorf("usage %s", u.RawJSON())
	}

	params := transcribeParams(openai.AudioModelWhisper1, openai.AudioResponseFormatVerboseJSON)
	params.TimestampGranularities = []string{"word", "segment"}
	params.Language = openai.String("fr")
	res, err = c.Audio.Transcriptions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	v := res.AsTranscriptionVerbose()
	if v.Duration != 1 || v.Language != "french" || v.Text != tr.Text || len(v.Words) != 9 || len(v.Segments) != 2 ||
		v.Segments[1].End != 1 || v.Usage.Seconds != 1 || v.Usage.Type != "duration" {
		t.Errorf("verbose %s", res.RawJSON())
	}
	whisper, err := c.Audio.Transcriptions.New(ctx, transcribeParams(openai.AudioModelWhisper1, openai.AudioResponseFormatJSON))
	if err != nil {
		t.Fatal(err)
	}
	if u := whisper.AsTranscription().Usage; u.Type != "duration" || u.Seconds != 1 {
		t.Errorf("whisper usage %s", u.RawJSON())
	}

	// Text formats come back as plain text.
	wantText := map[openai.AudioResponseFormat]string{
		openai.AudioResponseFormatText: tr.Text + "\n",
		openai.AudioResponseFormatSRT:  "1\n00:00:00,000 --> 00:00:00,890\n" + strings.Join(strings.Fields(tr.Text)[:8], " ") + "\n\n2\n00:00:00,890 --> 00:00:01,000\n" + strings.Fields(tr.Text)[8] + "\n\n",
		openai.AudioResponseFormatVTT:  "WEBVTT\n\n00:00:00.000 --> 00:00:00.890\n" + strings.Join(strings.Fields(tr.Text)[:8], " ") + "\n\n00:00:00.890 --> 00:00:01.000\n" + strings.Fields(tr.Text)[8] + "\n\n",
	}
	for format, want := range wantText {
		var got string
		if err := c.Post(ctx, "audio/transcriptions", transcribeParams(openai.AudioModelWhisper1, format), &got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: %q, want %q", format, got, want)
		}
	}

	// Streaming, for the models that can.
	s := c.Audio.Transcriptions.NewStreaming(ctx, transcribeParams(openai.AudioModelGPT4oMiniTranscribe, ""))
	var text strings.Builder
	var done openai.TranscriptionTextDoneEvent
	for s.Next() {
		switch ev := s.Current(); ev.Type {
		case "transcript.text.delta":
			text.WriteString(ev.Delta)
		case "transcript.text.done":
			done = ev.AsTranscriptTextDone()
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != tr.Text || done.Text != tr.Text || done.Usage.TotalTokens != 19 {
		t.Errorf("streamed %q, done %s", text.String(), done.RawJSON())
	}
}

func TestOpenAITranslations(t *testing.T) {
	t.Parallel()
	_, c := openaiClient(t, Options{})
	res, err := c.Audio.Translations.New(context.Background(), openai.AudioTranslationNewParams{
		File: openai.File(bytes.NewReader(testWAV(2)), "rede.wav", "audio/wav"), Model: openai.AudioModelWhisper1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Text, fmt.Sprintf("Translated %d bytes of rede.wav: ", len(testWAV(2)))) {
		t.Errorf("text %q", res.Text)
	}
	var keys map[string]any
	if err := json.Unmarshal([]byte(res.RawJSON()), &keys); err != nil || len(keys) != 1 {
		t.Errorf("a translation's json is just its text: %s", res.RawJSON())
	}
	var verbose struct {
		Task, Language string
		Duration       float64
		Usage          any
	}
	if err := c.Post(context.Background(), "audio/translations", openai.AudioTranslationNewParams{
		File: openai.File(bytes.NewReader(testWAV(2)), "rede.wav", "audio/wav"), Model: openai.AudioModelWhisper1,
		ResponseFormat: openai.AudioTranslationNewParamsResponseFormatVerboseJSON,
	}, &verbose, option.WithHeader("Accept", "application/json")); err != nil {
		t.Fatal(err)
	}
	if verbose.Task != "translate" || verbose.Language != "english" || verbose.Duration != 2 || verbose.Usage != nil {
		t.Errorf("verbose translation %+v", verbose)
	}
}

// Speech is streamed: with an hour between chunks the first one still arrives at once, and
// #sim:cut drops the connection half way.
func TestSpeechStreaming(t *testing.T) {
	t.Parallel()
	_, slow := start(t, Options{ChunkDelay: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", slow+"/v1/audio/speech", strings.NewReader(`{"model":"tts-1","input":"one two three","voice":"alloy","response_format":"pcm"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 1024)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Errorf("the first chunk did not arrive on its own: %v", err)
	}
	resp.Body.Close()

	_, url := start(t, Options{})
	status, h, raw, err := post(t, url, "/v1/audio/speech", `{"model":"tts-1","input":"one two three four #sim:cut","voice":"alloy","response_format":"pcm"}`)
	if status != 200 || h.Get("Content-Type") != "audio/pcm" || err == nil || len(raw) != 2*1024 {
		t.Errorf("cut speech: %d, %d bytes, err %v", status, len(raw), err)
	}
}
