package metering

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The edges of every rule: a count exactly at its limit is charged, one past it is not, and
// anything that is not a whole token count leaves the record unchargeable.
func TestUsageRulesAtTheirEdges(t *testing.T) {
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
		{"openai chat: an empty answer (zero counts) is chargeable", FromOpenAIChat, `{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`, ok(0, 0, 0, 0, 0)},
		{"openai chat: cache read and write together equal to the prompt", FromOpenAIChat,
			`{"prompt_tokens":100,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":60,"cache_write_tokens":40}}`, ok(0, 60, 40, 1, 0)},
		{"openai chat: cache read and write together above the prompt", FromOpenAIChat,
			`{"prompt_tokens":100,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":10,"cache_write_tokens":95}}`, bad},
		{"openai chat: all output is reasoning", FromOpenAIChat,
			`{"prompt_tokens":3,"completion_tokens":7,"completion_tokens_details":{"reasoning_tokens":7}}`, ok(3, 0, 0, 7, 7)},
		{"openai chat: negative completion", FromOpenAIChat, `{"prompt_tokens":3,"completion_tokens":-1}`, bad},
		{"openai chat: negative cache write", FromOpenAIChat, `{"prompt_tokens":3,"completion_tokens":1,"prompt_tokens_details":{"cache_write_tokens":-1}}`, bad},
		{"openai chat: negative reasoning", FromOpenAIChat, `{"prompt_tokens":3,"completion_tokens":1,"completion_tokens_details":{"reasoning_tokens":-1}}`, bad},
		{"openai chat: a fractional count", FromOpenAIChat, `{"prompt_tokens":1.5,"completion_tokens":1}`, bad},
		{"openai chat: a count as a string", FromOpenAIChat, `{"prompt_tokens":"9","completion_tokens":1}`, bad},
		{"openai chat: a null prompt", FromOpenAIChat, `{"prompt_tokens":null,"completion_tokens":1}`, bad},
		{"openai chat: a null completion", FromOpenAIChat, `{"prompt_tokens":1,"completion_tokens":null}`, bad},
		{"openai chat: no completion", FromOpenAIChat, `{"prompt_tokens":1}`, bad},
		{"openai chat: a null total is no total", FromOpenAIChat, `{"prompt_tokens":1,"completion_tokens":2,"total_tokens":null}`, ok(1, 0, 0, 2, 0)},
		{"openai chat: null details are no details", FromOpenAIChat,
			`{"prompt_tokens":4,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":null}}`, ok(4, 0, 0, 2, 0)},
		{"openai chat: not JSON", FromOpenAIChat, `{"prompt_tokens":`, bad},
		{"openai chat: not an object", FromOpenAIChat, `[1,2]`, bad},

		{"openai responses: cache write is input", FromOpenAIResponses,
			`{"input_tokens":50,"input_tokens_details":{"cached_tokens":5,"cache_write_tokens":20},"output_tokens":3,"total_tokens":53}`, ok(25, 5, 20, 3, 0)},
		{"openai responses: total disagrees", FromOpenAIResponses, `{"input_tokens":5,"output_tokens":3,"total_tokens":9}`, bad},
		{"openai responses: no output", FromOpenAIResponses, `{"input_tokens":5}`, bad},
		{"openai responses: no input", FromOpenAIResponses, `{"output_tokens":5}`, bad},
		{"openai responses: not JSON", FromOpenAIResponses, `{"input_tokens":`, bad},
		{"openai responses: missing", FromOpenAIResponses, ``, bad},
		{"openai responses: null", FromOpenAIResponses, `null`, bad},

		{"anthropic: zero counts", FromAnthropic, `{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}`, ok(0, 0, 0, 0, 0)},
		{"anthropic: all output is thinking", FromAnthropic, `{"input_tokens":2,"output_tokens":9,"output_tokens_details":{"thinking_tokens":9}}`, ok(2, 0, 0, 9, 9)},
		{"anthropic: thinking above output", FromAnthropic, `{"input_tokens":2,"output_tokens":9,"output_tokens_details":{"thinking_tokens":10}}`, bad},
		{"anthropic: negative input", FromAnthropic, `{"input_tokens":-1,"output_tokens":9}`, bad},
		{"anthropic: negative output", FromAnthropic, `{"input_tokens":1,"output_tokens":-9}`, bad},
		{"anthropic: negative cache write", FromAnthropic, `{"input_tokens":1,"output_tokens":9,"cache_creation_input_tokens":-1}`, bad},
		{"anthropic: negative cache read", FromAnthropic, `{"input_tokens":1,"output_tokens":9,"cache_read_input_tokens":-1}`, bad},
		{"anthropic: negative thinking", FromAnthropic, `{"input_tokens":1,"output_tokens":9,"output_tokens_details":{"thinking_tokens":-1}}`, bad},
		{"anthropic: no input count", FromAnthropic, `{"output_tokens":5}`, bad},
		{"anthropic: not JSON", FromAnthropic, `{"input_tokens":`, bad},
		{"anthropic: missing", FromAnthropic, ``, bad},
		{"anthropic: null", FromAnthropic, `null`, bad},

		{"gemini: cached content equal to the prompt", FromGemini, `{"promptTokenCount":10,"cachedContentTokenCount":10,"candidatesTokenCount":1,"totalTokenCount":11}`, ok(0, 10, 0, 1, 0)},
		{"gemini: no prompt count", FromGemini, `{"candidatesTokenCount":1}`, bad},
		{"gemini: not JSON", FromGemini, `{"promptTokenCount":`, bad},
		{"gemini: missing", FromGemini, ``, bad},
		{"gemini: null", FromGemini, `null`, bad},
		{"gemini: negative candidates", FromGemini, `{"promptTokenCount":10,"candidatesTokenCount":-1}`, bad},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.fn(json.RawMessage(tc.raw))
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(Usage{}, "Why")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if !got.Reliable && got.Why == "" {
				t.Error("unreliable without a reason")
			}
		})
	}
}

// Merging keeps what a later object leaves out and takes what it repeats.
func TestAnthropicMergeTakesEveryFieldALaterObjectCarries(t *testing.T) {
	t.Parallel()
	n := func(v int64) *int64 { return &v }
	acc := Anthropic{InputTokens: n(1), OutputTokens: n(1), CacheCreationInputTokens: n(1), CacheReadInputTokens: n(1)}
	acc.Merge(Anthropic{})
	if diff := cmp.Diff(Usage{Input: 1, CachedInput: 1, CacheWrite: 1, Output: 1, Reliable: true}, acc.Usage()); diff != "" {
		t.Errorf("an empty later object changed the record (-want +got):\n%s", diff)
	}
	later := Anthropic{InputTokens: n(2), OutputTokens: n(30), CacheCreationInputTokens: n(4), CacheReadInputTokens: n(5)}
	later.OutputTokensDetails = &struct {
		ThinkingTokens int64 `json:"thinking_tokens"`
	}{ThinkingTokens: 6}
	acc.Merge(later)
	if diff := cmp.Diff(Usage{Input: 2, CachedInput: 5, CacheWrite: 4, Output: 30, Reasoning: 6, Reliable: true}, acc.Usage()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := (Usage{Input: 2, CachedInput: 5, CacheWrite: 4}).TotalInput(); got != 11 {
		t.Errorf("total input %d, want 11", got)
	}
}

// A realtime response.done: cached tokens are inside input_tokens, audio parts inside their
// side; the audio read from the cache is cached input, not audio input.
func TestRealtimeUsageParts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, event string
		want        Usage
	}{
		{"text and audio with a cached part",
			`{"response":{"usage":{"total_tokens":130,"input_tokens":100,"output_tokens":30,
			  "input_token_details":{"cached_tokens":40,"audio_tokens":50,"cached_tokens_details":{"audio_tokens":20}},
			  "output_token_details":{"audio_tokens":25}}}}`,
			Usage{Input: 60, CachedInput: 40, Output: 30, AudioInput: 30, AudioOutput: 25, Reliable: true}},
		{"all of it audio", `{"response":{"usage":{"input_tokens":10,"output_tokens":5,"input_token_details":{"audio_tokens":10},"output_token_details":{"audio_tokens":5}}}}`,
			Usage{Input: 10, Output: 5, AudioInput: 10, AudioOutput: 5, Reliable: true}},
		{"no audio at all", `{"response":{"usage":{"input_tokens":0,"output_tokens":0,"total_tokens":0}}}`, Usage{Reliable: true}},
		{"audio input above the uncached input", `{"response":{"usage":{"input_tokens":10,"output_tokens":5,"input_token_details":{"cached_tokens":5,"audio_tokens":6}}}}`, Usage{}},
		{"audio output above the output", `{"response":{"usage":{"input_tokens":10,"output_tokens":5,"output_token_details":{"audio_tokens":6}}}}`, Usage{}},
		{"negative audio output", `{"response":{"usage":{"input_tokens":10,"output_tokens":5,"output_token_details":{"audio_tokens":-1}}}}`, Usage{}},
		{"more cached audio than audio", `{"response":{"usage":{"input_tokens":10,"output_tokens":5,"input_token_details":{"cached_tokens":5,"audio_tokens":1,"cached_tokens_details":{"audio_tokens":2}}}}}`, Usage{}},
		{"total disagrees", `{"response":{"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":16}}}`, Usage{}},
		{"cached above input", `{"response":{"usage":{"input_tokens":10,"output_tokens":5,"input_token_details":{"cached_tokens":11}}}}`, Usage{}},
		{"counts that are not numbers", `{"response":{"usage":{"input_tokens":"10","output_tokens":5}}}`, Usage{}},
		{"no output count", `{"response":{"usage":{"input_tokens":10}}}`, Usage{}},
		{"no usage", `{"response":{"status":"cancelled"}}`, Usage{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := FromRealtimeResponse([]byte(c.event))
			if diff := cmp.Diff(c.want, got, cmpopts.IgnoreFields(Usage{}, "Why")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if !got.Reliable && got.Why == "" {
				t.Error("unreliable without a reason")
			}
		})
	}
}

// Media answers at the edges: zero counts are counts, audio may be all of the input.
func TestFromMediaAnswerEdges(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, family, body string
		want               Usage
	}{
		{"zero rerank tokens", "rerank", `{"usage":{"total_tokens":0}}`, Usage{Reliable: true}},
		{"negative rerank tokens", "rerank", `{"usage":{"total_tokens":-1}}`, Usage{}},
		{"zero image tokens", "images.generations", `{"usage":{"input_tokens":0,"output_tokens":0,"total_tokens":0}}`, Usage{Reliable: true}},
		{"all input is audio", "audio.transcriptions", `{"usage":{"type":"tokens","input_tokens":10,"output_tokens":2,"input_tokens_details":{"audio_tokens":10}}}`,
			Usage{Input: 10, Output: 2, AudioInput: 10, Reliable: true}},
		{"audio above the input", "audio.translations", `{"usage":{"type":"tokens","input_tokens":10,"output_tokens":2,"input_tokens_details":{"audio_tokens":11}}}`, Usage{}},
		{"negative audio", "audio.transcriptions", `{"usage":{"input_tokens":10,"output_tokens":2,"input_tokens_details":{"audio_tokens":-1}}}`, Usage{}},
		{"only input reported", "images.variations", `{"usage":{"input_tokens":10}}`, Usage{}},
		{"only output reported", "images.edits", `{"usage":{"output_tokens":10}}`, Usage{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := FromMediaAnswer(c.family, []byte(c.body))
			if diff := cmp.Diff(c.want, got, cmpopts.IgnoreFields(Usage{}, "Why")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
