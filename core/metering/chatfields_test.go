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

// sameCounts fails t when the one-pass counts of raw give a record other than gjson's reading
// gives, or read what gjson does not take for JSON, and tells whether the one pass read raw.
func sameCounts(t *testing.T, raw []byte) bool {
	t.Helper()
	n, ok := openAIChatCounts(raw)
	if !ok {
		return false
	}
	if !gjson.ValidBytes(raw) {
		t.Fatalf("%q: read in one pass, not valid JSON to gjson", raw)
	}
	if got, want := fromInclusive(n[0], n[3], n[4], n[1], n[5]), fromOpenAIChatFields(raw); got != want {
		t.Fatalf("%s: one pass %+v, gjson %+v", raw, got, want)
	}
	return true
}

var countSeeds = []struct {
	raw  string
	fast bool
}{
	{`{"prompt_tokens":20000,"completion_tokens":20,"total_tokens":20020,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`, true},
	{"{\n  \"prompt_tokens\": 7,\n  \"completion_tokens\": 1,\n  \"prompt_tokens_details\": { \"cached_tokens\": 0 }, \"x\": [\"}\", {\"a\": null}]\n}", true},
	{`{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":4,"cache_write_tokens":2},"completion_tokens_details":{"reasoning_tokens":3}}`, true},
	{`{"prompt_tokens":3,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":4}}`, true}, // a contradiction, read alike
	{`{"prompt_tokens":-1,"completion_tokens":0}`, true},
	{`{"prompt_tokens":9007199254740991,"completion_tokens":0}`, true},
	{`{"prompt_tokens":9007199254740993,"completion_tokens":0}`, false}, // gjson reads ...992
	{`{"prompt_tokens":10,"completion_tokens":5,"total_tokens":16}`, false},
	{`{"prompt_tokens":10}`, false},
	{`{"prompt_tokens":1.0,"completion_tokens":2}`, false},
	{`{"prompt_tokens":1e1,"completion_tokens":2}`, false},
	{`{"prompt_tokens":null,"completion_tokens":2}`, false},
	{`{"prompt_tokens":"1","completion_tokens":2}`, false},
	{`{"prompt_tokens":1,"prompt_tokens":2,"completion_tokens":3}`, false},
	{`{"prompt\u005ftokens":4,"completion_tokens":2}`, true}, // the name decoded, as gjson does
	{`{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens_details":null}`, false},
	{`{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1},"prompt_tokens_details":{"cached_tokens":1}}`, false},
	{`{"prompt_tokens":4,"completion_tokens":2,"prompt_tokens_details":{},"prompt_tokens_details":{"cached_tokens":1}}`, false}, // a name twice
	{`[1]`, false},
}

func TestOpenAIChatCountsAreGJSONs(t *testing.T) {
	t.Parallel()
	for _, s := range countSeeds {
		if fast := sameCounts(t, []byte(s.raw)); fast != s.fast {
			t.Errorf("%s: one pass %v, want %v", s.raw, fast, s.fast)
		}
	}
}

// FuzzOpenAIChatCounts: whatever usage the one pass reads, it reads as gjson's reading does.
func FuzzOpenAIChatCounts(f *testing.F) {
	for _, s := range countSeeds {
		f.Add([]byte(s.raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { sameCounts(t, raw) })
}
