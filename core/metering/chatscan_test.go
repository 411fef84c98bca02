package metering

import "testing"

// samePlain fails t when the plain reading of raw gives a record other than the general
// way's, and tells whether the plain reading read raw.
func samePlain(t *testing.T, raw []byte) bool {
	t.Helper()
	n, ok := plainChatCounts(raw)
	if !ok {
		return false
	}
	if got, want := fromInclusive(n[0], n[3], n[4], n[1], n[5]), fromOpenAIChatRead(raw); got != want {
		t.Fatalf("%s: plain %+v, general %+v", raw, got, want)
	}
	return true
}

var plainSeeds = []struct {
	raw   string
	plain bool
}{
	{`{"prompt_tokens":20000,"completion_tokens":20,"total_tokens":20020,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`, true},
	{"{\n  \"prompt_tokens\": 7,\n  \"completion_tokens\": 1,\n  \"prompt_tokens_details\": { \"cached_tokens\": 0 }\n}\n", true},
	{`{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":4,"cache_write_tokens":2},"completion_tokens_details":{"reasoning_tokens":3}}`, true},
	{`{"prompt_tokens":3,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":4}}`, true}, // a contradiction, read alike
	{`{"prompt_tokens":5,"completion_tokens":1,"completion_tokens_details":{"reasoning_tokens":2}}`, true},
	{`{"prompt_tokens":1,"completion_tokens":2,"service_tier":"default","cost":null,"x":true,"y":false,"z":0}`, true},
	{`{"prompt_tokens":999999999999999,"completion_tokens":0}`, true},
	{`{"completion_tokens":2,"prompt_tokens":1,"prompt_tokens_details":{},"completion_tokens_details":{}}`, true},
	{`{"prompt_tokens":1,"completion_tokens":2,"x":1,"x":2}`, true}, // unread names: the general way reads the same counts
	{`{"prompt_tokens":1000000000000000,"completion_tokens":0}`, false},
	{`{"prompt_tokens":-1,"completion_tokens":0}`, false},
	{`{"prompt_tokens":01,"completion_tokens":0}`, false},
	{`{"prompt_tokens":10,"completion_tokens":5,"total_tokens":16}`, false},
	{`{"prompt_tokens":10}`, false},
	{`{"completion_tokens":10}`, false},
	{`{"prompt_tokens":1.0,"completion_tokens":2}`, false},
	{`{"prompt_tokens":1e1,"completion_tokens":2}`, false},
	{`{"prompt_tokens":null,"completion_tokens":2}`, false},
	{`{"prompt_tokens":"1","completion_tokens":2}`, false},
	{`{"prompt_tokens":1,"prompt_tokens":2,"completion_tokens":3}`, false},
	{`{"prompt\u005ftokens":4,"completion_tokens":2}`, false},
	{`{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens_details":null}`, false},
	{`{"prompt_tokens":4,"completion_tokens":2,"prompt_tokens_details":{},"prompt_tokens_details":{"cached_tokens":1}}`, false},
	{`{"prompt_tokens":4,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":1}}`, false},
	{`{"prompt_tokens":4,"completion_tokens":2,"x":[1]}`, false},
	{`{"prompt_tokens":4,"completion_tokens":2,"x":{"a":1}}`, false},
	{`{"prompt_tokens":4,"completion_tokens":2,"x":"caf` + "\xc3\xa9" + `"}`, false},
	{`{"prompt_tokens":4,"completion_tokens":2,}`, false},
	{`{"prompt_tokens":4,"completion_tokens":2} x`, false},
	{`{"prompt_tokens":4 "completion_tokens":2}`, false},
	{`{"prompt_tokens":4,"completion_tokens":2,"x":nul}`, false},
	{`{"prompt_tokens":4,"completion_tokens":2`, false},
	{`[1]`, false},
	{`null`, false},
	{``, false},
}

func TestPlainChatCountsAreTheGeneralWays(t *testing.T) {
	t.Parallel()
	for _, s := range plainSeeds {
		if plain := samePlain(t, []byte(s.raw)); plain != s.plain {
			t.Errorf("%s: plain %v, want %v", s.raw, plain, s.plain)
		}
		if got, want := FromOpenAIChat([]byte(s.raw)), fromOpenAIChatRead([]byte(s.raw)); got != want {
			t.Errorf("%s: FromOpenAIChat %+v, general %+v", s.raw, got, want)
		}
	}
}

// FuzzPlainChatCounts: whatever usage the plain reading reads, it reads as the general way.
func FuzzPlainChatCounts(f *testing.F) {
	for _, s := range plainSeeds {
		f.Add([]byte(s.raw))
	}
	for _, s := range countSeeds {
		f.Add([]byte(s.raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { samePlain(t, raw) })
}
