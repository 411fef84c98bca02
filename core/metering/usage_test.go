package metering

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Recorded native usage objects, as each provider sends them.
func TestNormalisation(t *testing.T) {
	t.Parallel()
	ok := func(in, cached, write, out, reasoning int64) Usage {
		return Usage{Input: in, CachedInput: cached, CacheWrite: write, Output: out, Reasoning: reasoning, Reliable: true}
	}
	bad := Usage{}
	cases := []struct {
		name string
		fn   func(json.RawMessage) Usage
		raw  string
		want Usage
	}{
		{"openai chat: cached tokens are a subset of the prompt", FromOpenAIChat,
			`{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":64}}`,
			ok(86, 1920, 0, 300, 64)},
		{"openai chat: cache-write subset", FromOpenAIChat,
			`{"prompt_tokens":100,"completion_tokens":5,"total_tokens":105,"prompt_tokens_details":{"cached_tokens":10,"cache_write_tokens":40}}`,
			ok(50, 10, 40, 5, 0)},
		{"openai chat: no details", FromOpenAIChat, `{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21}`, ok(9, 0, 0, 12, 0)},
		{"openai chat: cached above prompt is a contradiction", FromOpenAIChat,
			`{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":11}}`, bad},
		{"openai chat: total disagrees", FromOpenAIChat, `{"prompt_tokens":10,"completion_tokens":1,"total_tokens":12}`, bad},
		{"openai chat: missing usage", FromOpenAIChat, ``, bad},
		{"openai chat: null usage", FromOpenAIChat, `null`, bad},
		{"openai chat: reasoning above output", FromOpenAIChat,
			`{"prompt_tokens":1,"completion_tokens":1,"completion_tokens_details":{"reasoning_tokens":2}}`, bad},
		{"openai responses", FromOpenAIResponses,
			`{"input_tokens":36,"input_tokens_details":{"cached_tokens":4},"output_tokens":87,"output_tokens_details":{"reasoning_tokens":20},"total_tokens":123}`,
			ok(32, 4, 0, 87, 20)},
		{"openai responses: negative", FromOpenAIResponses, `{"input_tokens":-1,"output_tokens":1}`, bad},
		{"anthropic: cache buckets are separate from input_tokens", FromAnthropic,
			`{"input_tokens":21,"cache_creation_input_tokens":188086,"cache_read_input_tokens":10,"output_tokens":393}`,
			ok(21, 10, 188086, 393, 0)},
		{"anthropic: null cache fields", FromAnthropic,
			`{"input_tokens":5,"cache_creation_input_tokens":null,"cache_read_input_tokens":null,"output_tokens":7}`, ok(5, 0, 0, 7, 0)},
		{"anthropic: no output count", FromAnthropic, `{"input_tokens":5}`, bad},
		{"gemini: cached content inside the prompt, thoughts outside candidates", FromGemini,
			`{"promptTokenCount":1000,"candidatesTokenCount":50,"cachedContentTokenCount":600,"thoughtsTokenCount":30,"totalTokenCount":1080}`,
			ok(400, 600, 0, 80, 30)},
		{"gemini: tool-use prompt tokens are input", FromGemini,
			`{"promptTokenCount":10,"candidatesTokenCount":2,"toolUsePromptTokenCount":5,"totalTokenCount":17}`, ok(15, 0, 0, 2, 0)},
		{"gemini: no candidates yet", FromGemini, `{"promptTokenCount":10,"totalTokenCount":10}`, ok(10, 0, 0, 0, 0)},
		{"gemini: cached above prompt", FromGemini, `{"promptTokenCount":10,"candidatesTokenCount":2,"cachedContentTokenCount":11}`, bad},
		{"gemini: total disagrees", FromGemini, `{"promptTokenCount":10,"candidatesTokenCount":2,"totalTokenCount":99}`, bad},
	}
	for _, tc := range cases {
		got := tc.fn(json.RawMessage(tc.raw))
		if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(Usage{}, "Why")); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
		if !got.Reliable && got.Why == "" {
			t.Errorf("%s: unreliable without a reason", tc.name)
		}
	}
}

// A streamed Anthropic reply: message_start carries input and cache counts, message_delta
// repeats them cumulatively. Adding instead of overwriting would double the cache tokens.
func TestAnthropicStreamUsageOverwritesNeverAdds(t *testing.T) {
	t.Parallel()
	var acc Anthropic
	for _, raw := range []string{
		`{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":1000,"output_tokens":2}`,
		`{"output_tokens":50}`,
		`{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":1000,"output_tokens":503}`,
	} {
		var u Anthropic
		if err := json.NewDecoder(strings.NewReader(raw)).Decode(&u); err != nil {
			t.Fatal(err)
		}
		acc.Merge(u)
	}
	want := Usage{Input: 472, CachedInput: 1000, Output: 503, Reliable: true}
	if diff := cmp.Diff(want, acc.Usage()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
