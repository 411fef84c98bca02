package openai

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/sse"
)

// fastAndGeneral decodes one chunk both ways with fresh decoders.
func fastAndGeneral(data []byte) (fast, general []*corev1.GenerateEvent, fastDec, generalDec *chatDecoder, err error) {
	fastDec, generalDec = &chatDecoder{}, &chatDecoder{}
	fast, _, _ = fastDec.Decode(sse.Event{Data: data})
	general, _, err = generalDec.general(data)
	return fast, general, fastDec, generalDec, err
}

func TestReadContentAgreesWithTheGeneralDecoder(t *testing.T) {
	t.Parallel()
	head := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","system_fingerprint":"fp_1",`
	for _, data := range []string{
		head + `"choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}],"usage":null}`,
		head + `"choices":[{"index":0,"delta":{"content":"a\n\"b\" \u00e9"},"finish_reason":null}]}`,
		head + `"choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"x1"}`,
		head + `"choices":[{"index":0,"delta":{"content":"the \"usage\":{ key"},"logprobs":null,"finish_reason":null}]}`,
	} {
		if _, ok := readContent([]byte(data)); !ok {
			t.Errorf("%s: not read in place", data)
		}
		fast, general, _, _, err := fastAndGeneral([]byte(data))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(general, fast, protocmp.Transform()); diff != "" {
			t.Errorf("%s: (-general +fast)\n%s", data, diff)
		}
	}
	for _, data := range []string{
		head + `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
		head + `"choices":[{"index":0,"delta":{"content":"x","reasoning_content":null},"finish_reason":null}]}`,
		head + `"choices":[{"index":0,"delta":{"content":"x"},"logprobs":null,"finish_reason":"stop"}]}`,
		head + `"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null},{"index":1,"delta":{"content":"y"},"finish_reason":null}]}`,
		head + `"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`,
		`{"usage":{"prompt_tokens":1},` + `"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}`,
		head + `"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}],"error":{"message":"boom"}}`,
		head + `"choices":[{"index":1,"delta":{"content":"x"},"finish_reason":null}]}`,
		head + `"choices":[{"delta":{"content":"x"},"index":0,"finish_reason":null}]}`,
		head + `"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": null}]}`,
		head + `"choices":[{"index":0,"delta":{"content":"cut`,
	} {
		if text, ok := readContent([]byte(data)); ok {
			t.Errorf("%s: read in place as %q; want the general decoder", data, text)
		}
	}
}

func FuzzReadContent(f *testing.F) {
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}],"usage":null}`))
	f.Add([]byte(`{"id":"x","choices":[{"index":0,"delta":{"content":"\u00e9"},"finish_reason":null}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, ok := readContent(data); !ok || caseVariantKeys(data) {
			return
		}
		fast, general, fastDec, generalDec, err := fastAndGeneral(data)
		if err != nil {
			return // not JSON after all: the general decoder refuses it, the fast one reads the text
		}
		if diff := cmp.Diff(general, fast, protocmp.Transform()); diff != "" || string(generalDec.usage) != string(fastDec.usage) || generalDec.finish != fastDec.finish {
			t.Fatalf("%q: (-general +fast)\n%s usage %s/%s finish %q/%q", data, diff, generalDec.usage, fastDec.usage, generalDec.finish, fastDec.finish)
		}
	})
}

// caseVariantKeys reports keys that encoding/json would match case-insensitively (as in
// "Usage"), which no upstream sends and the in-place reader rightly ignores.
func caseVariantKeys(data []byte) bool {
	lower := bytes.ToLower(data)
	for _, k := range []string{`"usage"`, `"error"`, `"choices"`, `"index"`, `"delta"`, `"content"`, `"finish_reason"`, `"logprobs"`} {
		if bytes.Count(lower, []byte(k)) != bytes.Count(data, []byte(k)) {
			return true
		}
	}
	return false
}

// FuzzIndexQuoted: indexQuoted is bytes.Index for each of the keys readContent looks for.
func FuzzIndexQuoted(f *testing.F) {
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}],"usage":null}`))
	f.Add([]byte(`""usage":{"error""error"`))
	f.Add([]byte(`usage":{"`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, key := range [][]byte{contentHead, keyUsageObj, keyError} {
			if got, want := indexQuoted(data, key), bytes.Index(data, key); got != want {
				t.Fatalf("%q in %q: %d, bytes.Index says %d", key, data, got, want)
			}
		}
	})
}

// BenchmarkReadContent: a chat chunk's content read in place.
func BenchmarkReadContent(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz","object":"chat.completion.chunk","created":1732700000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0123456789","choices":[{"index":0,"delta":{"content":" alpha"},"logprobs":null,"finish_reason":null}],"usage":null}`)
	for b.Loop() {
		if text, ok := readContent(data); !ok || text != " alpha" {
			b.Fatal("not read")
		}
	}
}
