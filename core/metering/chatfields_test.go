package metering

import (
	"testing"

	"github.com/tidwall/gjson"
)

// The one-pass reading of a chat usage object finds what six gjson Gets find, duplicate and
// oddly typed keys included.
func TestOpenAIChatFieldsAreWhatGetFinds(t *testing.T) {
	t.Parallel()
	paths := []string{"prompt_tokens", "completion_tokens", "total_tokens",
		"prompt_tokens_details.cached_tokens", "prompt_tokens_details.cache_write_tokens",
		"completion_tokens_details.reasoning_tokens"}
	for _, raw := range []string{
		`{}`,
		`{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}`,
		`{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":4,"cache_write_tokens":2,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":3,"audio_tokens":1}}`,
		"{\n  \"prompt_tokens\": 7,\n  \"completion_tokens\": 1,\n  \"prompt_tokens_details\": { \"cached_tokens\": 0 }\n}",
		`{"prompt_tokens":1,"prompt_tokens":2,"completion_tokens":null,"completion_tokens":3}`,
		`{"prompt_tokens_details":{"cached_tokens":1},"prompt_tokens_details":{"cached_tokens":2,"cache_write_tokens":5}}`,
		`{"prompt_tokens_details":null,"completion_tokens_details":7,"prompt_tokens":"9","completion_tokens":1.5}`,
		`{"completion_tokens_details":{"reasoning_tokens":{"x":1}},"total_tokens":[1]}`,
		`{"prompt\u005ftokens":4,"completion_tokens":2}`,
		`{"nested":{"prompt_tokens":99},"prompt_tokens":1,"completion_tokens":2}`,
		`{"prompt_tokens_details":[{"cached_tokens":1}],"prompt_tokens_details":{"cached_tokens":3}}`,
		`{"completion_tokens_details":5,"completion_tokens_details":{"reasoning_tokens":6},"completion_tokens_details":{"reasoning_tokens":8}}`,
		`{"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":2}}`,
	} {
		got := openAIChatFields(gjson.Parse(raw))
		for i, p := range paths {
			want := gjson.Get(raw, p)
			if got[i].Exists() != want.Exists() || got[i].Type != want.Type || got[i].Raw != want.Raw {
				t.Errorf("%s in %s: got %v %q, want %v %q", p, raw, got[i].Type, got[i].Raw, want.Type, want.Raw)
			}
		}
	}
}
