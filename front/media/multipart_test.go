package media

import (
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	corev1 "modelgateway/gen/gateway/core/v1"
)

// The official SDKs write a form's parts in lexicographic order of their names, so the file
// usually comes before "model"; curl users write them in any order.
func TestMultipartForms(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, family string
		chunked      bool
		parts        []part
	}{
		{"transcription_file_before_model_is_staged", "audio.transcriptions", false, []part{
			file("file", "speech.mp3", "audio/mpeg", 70000, 1), field("model", "whisper-1"),
			field("prompt", "names: Ada"), field("response_format", "json")}},
		{"translation_sent_chunked_holds_for_its_parts_bytes", "audio.translations", true, []part{
			file("file", "speech.wav", "audio/wav", 40000, 2), field("model", "whisper-1")}},
		{"edits_several_images_and_a_mask_before_model_keep_their_order", "images.edits", false, []part{
			file("image[]", "a.png", "image/png", 40000, 3), file("image[]", "b.png", "image/png", 1000, 4),
			file("mask", "mask.png", "image/png", 500, 5), field("model", "gpt-image-1"), field("n", "2"),
			field("prompt", "add a hat"), field("user", "u-1")}},
		{"edits_model_before_the_image_streams_it_live", "images.edits", false, []part{
			field("model", "dall-e-2"), field("prompt", "a cat"), file("image", "cat.png", "image/png", 100000, 6),
			field("size", "256x256"), file("mask", "m.png", "image/png", 33000, 7), field("user", "after the head")}},
		{"variations_staged_image_then_a_live_one_after_model", "images.variations", true, []part{
			file("image", "a.png", "image/png", 10, 8), field("model", "dall-e-2"),
			file("image[]", "b.png", "image/png", chunkSize, 9), field("n", "1")}},
		{"an_empty_file_and_the_stream_field", "audio.transcriptions", false, []part{
			file("file", "empty.mp3", "audio/mpeg", 0, 10), field("model", "gpt-4o-transcribe"), field("stream", "true")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			core := &fakeCore{answer: jsonAnswer()}
			h := newHandler(t, tc.family, nil)
			var staged []os.DirEntry
			h.Forward = func(s corev1.CoreService_ForwardServer) error {
				staged, _ = os.ReadDir(h.TempDir)
				return core.forward(s)
			}
			body := buildForm(t, tc.parts...)
			rec := serve(t, h, newRequest(body, formType, tc.chunked))
			if rec.Code != http.StatusOK || rec.Body.String() != okJSON {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			if core.got.err != nil {
				t.Fatalf("core read: %v", core.got.err)
			}
			checkForm(t, tc.parts, core.got)
			// Staging is on disk, in one file, only when a file came before the model.
			wantStaged := 0
			if tc.parts[0].isFile() && len(tc.parts[0].body) > 0 {
				wantStaged = 1
			}
			if len(staged) != wantStaged {
				t.Errorf("%d staged files during the call, want %d", len(staged), wantStaged)
			}
			golden(t, tc.name, core.got.transcript())
		})
	}
}

func TestMultipartRejects(t *testing.T) {
	t.Parallel()
	bigField := strings.Repeat("x", maxField+1)
	cases := []struct {
		name, family string
		body         string
		key          string
		status       int
		code         string
		message      string
		headSent     bool
	}{
		{"no model (spec 4.4 minimal fields)", "images.edits",
			formString(t, file("image", "a.png", "image/png", 100, 1), field("prompt", "p")), goodKey,
			400, "invalid_request_error", "model is required", false},
		{"an empty model", "audio.transcriptions",
			formString(t, file("file", "a.mp3", "audio/mpeg", 100, 1), field("model", "")), goodKey,
			400, "invalid_request_error", "model is required", false},
		{"no image on edits", "images.edits", formString(t, field("model", "m"), field("prompt", "p")), goodKey,
			400, "invalid_request_error", "image is required", false},
		{"only a mask on edits, staged", "images.edits",
			formString(t, file("mask", "m.png", "image/png", 100, 1), field("model", "m")), goodKey,
			400, "invalid_request_error", "image is required", false},
		{"only a mask on edits, after the head", "images.edits",
			formString(t, field("model", "m"), file("mask", "m.png", "image/png", 100, 1), field("prompt", "p")), goodKey,
			400, "invalid_request_error", "image is required", true},
		{"file as a plain field on transcriptions", "audio.transcriptions",
			formString(t, field("file", "not a file"), field("model", "whisper-1")), goodKey,
			400, "invalid_request_error", "file is required", false},
		{"a field above 1 MiB before the head", "audio.translations",
			formString(t, file("file", "a.mp3", "audio/mpeg", 10, 1), field("model", "whisper-1"), field("prompt", bigField)), goodKey,
			400, "invalid_request_error", `"prompt" is larger than`, false},
		{"a field above 1 MiB after the head", "audio.translations",
			formString(t, field("model", "whisper-1"), file("file", "a.mp3", "audio/mpeg", 10, 1), field("prompt", bigField)), goodKey,
			400, "invalid_request_error", `"prompt" is larger than`, true},
		{"a form cut short before the head", "images.variations",
			formString(t, file("image", "a.png", "image/png", 5000, 1), field("model", "m"))[:3000], goodKey,
			400, "invalid_request_error", "unexpected EOF", false},
		{"a form cut short in a live file", "images.variations",
			formString(t, field("model", "m"), file("image", "a.png", "image/png", 5000, 1))[:3000], goodKey,
			400, "invalid_request_error", "unexpected EOF", true},
		{"an empty body", "images.variations", "", goodKey, 400, "invalid_request_error", "multipart", false},
		{"more parts than any SDK sends, before the head (issue 16)", "audio.transcriptions",
			formString(t, append(tinyFields(maxParts), field("model", "whisper-1"))...), goodKey,
			400, "invalid_request_error", "more than 256 parts", false},
		{"more parts than any SDK sends, after the head", "audio.transcriptions",
			formString(t, append([]part{field("model", "whisper-1"), file("file", "a.mp3", "audio/mpeg", 10, 1)}, tinyFields(maxParts)...)...), goodKey,
			400, "invalid_request_error", "more than 256 parts", true},
		{"plain fields above 2 MiB together", "audio.transcriptions",
			formString(t, field("a", bigField[:maxField]), field("b", bigField[:maxField]), field("c", "x"), field("model", "whisper-1")), goodKey,
			400, "invalid_request_error", "plain fields together are larger than", false},
		// One reading (contract): the upstream's form parser takes the last of two fields, the
		// head the first; a field core decides on after the files was never seen by core.
		{"a field given twice before the head", "audio.transcriptions",
			formString(t, field("model", "whisper-1"), field("language", "en"), field("language", "fr"), file("file", "a.mp3", "audio/mpeg", 10, 1)), goodKey,
			400, "invalid_request_error", `"language" appears twice`, false},
		{"the model given twice around the file", "audio.transcriptions",
			formString(t, field("model", "whisper-1"), file("file", "a.mp3", "audio/mpeg", 10, 1), field("model", "gpt-4o-transcribe")), goodKey,
			400, "invalid_request_error", `"model" appears twice`, true},
		{"stream after the file, unseen by core", "audio.transcriptions",
			formString(t, field("model", "whisper-1"), file("file", "a.mp3", "audio/mpeg", 10, 1), field("stream", "true")), goodKey,
			400, "invalid_request_error", `"stream" must come before`, true},
		{"a bad key wins over a bad form (spec 5 rule 2)", "images.edits", formString(t, field("prompt", "p")), "Bearer sk-bad",
			401, "invalid_key", "not valid", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			core := &fakeCore{answer: jsonAnswer()}
			h := newHandler(t, tc.family, core.forward)
			r := newRequest([]byte(tc.body), formType, false)
			r.Header.Set("Authorization", tc.key)
			rec := serve(t, h, r)
			checkError(t, rec, tc.status, tc.code, tc.message)
			if core.called != tc.headSent {
				t.Errorf("core called: %t, want %t", core.called, tc.headSent)
			}
		})
	}
}

// tinyFields is n one-byte plain fields.
func tinyFields(n int) []part {
	out := make([]part, n)
	for i := range out {
		out[i] = field("f"+strconv.Itoa(i), "x")
	}
	return out
}

func formString(t *testing.T, parts ...part) string { return string(buildForm(t, parts...)) }
