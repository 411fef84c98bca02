package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/sse"
)

// bothWays decodes chunks with the fast path allowed and with the general decoder only.
func bothWays(t testing.TB, chunks ...string) (fast, general []*corev1.GenerateEvent, fastDec, generalDec *decoder, err error) {
	fastDec, generalDec = newDecoder(), newDecoder()
	for _, c := range chunks {
		out, _, ferr := fastDec.Decode(sse.Event{Data: []byte(c)})
		fast = append(fast, out...)
		var gc chunk
		if err = json.Unmarshal([]byte(c), &gc); err != nil || ferr != nil {
			return fast, general, fastDec, generalDec, err
		}
		general = append(general, generalDec.chunk(&gc)...)
	}
	return fast, general, fastDec, generalDec, nil
}

func TestReadTextAgreesWithTheGeneralDecoder(t *testing.T) {
	t.Parallel()
	usage := `"usageMetadata": {"promptTokenCount": 5,"candidatesTokenCount": 2,"totalTokenCount": 7}`
	for _, data := range []string{
		`{"candidates": [{"content": {"parts": [{"text": "Hi"}],"role": "model"},"index": 0}],` + usage + `,"modelVersion": "gemini-2.5-flash","responseId": "r1"}`,
		`{"candidates": [{"content": {"parts": [{"text": "a\n\"b\" \u00e9"}],"role": "model"},"index": 0}],"modelVersion": "m"}`,
		`{"candidates":[{"content":{"parts":[{"text":"compact"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":1}}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"role first"}]},"index":0}],"usageMetadata":{"promptTokenCount":1}}`,
		`{"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"},"index": 0}]}`,
	} {
		if _, _, ok := readText([]byte(data)); !ok {
			t.Errorf("%s: not read in place", data)
		}
		fast, general, fd, gd, err := bothWays(t, data)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(general, fast, protocmp.Transform()); diff != "" {
			t.Errorf("%s: (-general +fast)\n%s", data, diff)
		}
		if diff := cmp.Diff(gd.Usage(), fd.Usage()); diff != "" || fd.chunks != gd.chunks {
			t.Errorf("%s: usage (-general +fast)\n%s chunks %d/%d", data, diff, gd.chunks, fd.chunks)
		}
	}
	for _, data := range []string{
		`{"candidates": [{"content": {"parts": [{"text": "x"}],"role": "model"},"finishReason": "STOP","index": 0}]}`,
		`{"candidates": [{"content": {"parts": [{"text": "x","thought": true}],"role": "model"},"index": 0}]}`,
		`{"candidates": [{"content": {"parts": [{"text": "x","thoughtSignature": "c2ln"}],"role": "model"},"index": 0}]}`,
		`{"candidates": [{"content": {"parts": [{"text": "x"},{"text": "y"}],"role": "model"},"index": 0}]}`,
		`{"candidates": [{"content": {"parts": [{"text": "x"}],"role": "model"},"index": 1}]}`,
		`{"candidates": [{"content": {"parts": [{"text": "x"}],"role": "model"},"index": 0}],"promptFeedback": {"blockReason": "SAFETY"}}`,
		`{"candidates": [{"content": {"parts": [{"text": "x"}],"role": "model"},"index": 0}],"error": {"code": 500}}`,
		`{"candidates": [{"content": {"parts": [{"text": "cut`,
	} {
		if text, _, ok := readText([]byte(data)); ok {
			t.Errorf("%s: read in place as %q; want the general decoder", data, text)
		}
	}
}

// Usage is cumulative: the last report wins, whichever path read it.
func TestUsageLastReportWinsAcrossPaths(t *testing.T) {
	t.Parallel()
	fastChunk := func(n int) string {
		return fmt.Sprintf(`{"candidates": [{"content": {"parts": [{"text": "x"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 5,"candidatesTokenCount": %d,"totalTokenCount": %d}}`, n, 5+n)
	}
	generalChunk := `{"candidates": [{"content": {"parts": [{"text": "y"}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 5,"candidatesTokenCount": 7,"totalTokenCount": 12}}`
	for _, tc := range []struct {
		chunks []string
		output int64
	}{
		{[]string{fastChunk(1), fastChunk(3)}, 3},
		{[]string{fastChunk(1), generalChunk}, 7},
		{[]string{generalChunk, fastChunk(4)}, 4},
	} {
		_, _, fd, gd, err := bothWays(t, tc.chunks...)
		if err != nil {
			t.Fatal(err)
		}
		if u, g := fd.Usage(), gd.Usage(); u.Output != tc.output || u != g {
			t.Errorf("%d chunks: usage %+v, general %+v, want output %d", len(tc.chunks), u, g, tc.output)
		}
	}
}

func FuzzReadText(f *testing.F) {
	f.Add([]byte(`{"candidates": [{"content": {"parts": [{"text": "Hi"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 5}}`))
	f.Add([]byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"\u00e9"}]},"index":0}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, _, ok := readText(data); !ok || caseVariantKeys(data) {
			return
		}
		fast, general, fd, gd, err := bothWays(t, string(data))
		if err != nil {
			return // not JSON after all: the general decoder refuses it
		}
		if diff := cmp.Diff(general, fast, protocmp.Transform()); diff != "" || fd.Usage() != gd.Usage() {
			t.Fatalf("%q: (-general +fast)\n%s usage %+v / %+v", data, diff, gd.Usage(), fd.Usage())
		}
	})
}

// caseVariantKeys reports keys that encoding/json would match case-insensitively (as in
// "UsageMetadata"), which no upstream sends and the in-place reader rightly ignores.
func caseVariantKeys(data []byte) bool {
	lower := bytes.ToLower(data)
	for _, k := range []string{`"usageMetadata"`, `"promptFeedback"`, `"error"`, `"candidates"`, `"content"`, `"parts"`, `"text"`, `"index"`, `"role"`} {
		if bytes.Count(lower, []byte(strings.ToLower(k))) != bytes.Count(data, []byte(k)) {
			return true
		}
	}
	return false
}
