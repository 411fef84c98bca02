// Package metering turns what an upstream reports about token use into the one record billing
// reads: four disjoint categories (spec 1) plus reasoning inside output, and a flag that says
// whether the numbers can be charged at all (spec 8, rule 2).
package metering

import (
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"

	"modelgateway/core/wire/strictjson"
)

// Usage is a normalised usage record. Input, CachedInput, CacheWrite and Output are disjoint:
// their sum is every token the request consumed. Reasoning is part of Output, never added.
type Usage struct {
	Input       int64 // uncached input
	CachedInput int64 // input read from the provider's cache
	CacheWrite  int64 // input written to the provider's cache
	Output      int64 // all output, reasoning included
	Reasoning   int64 // the reasoning part of Output
	AudioInput  int64 // the audio part of Input (uncached audio input)
	AudioOutput int64 // the audio part of Output
	// Reliable is false when the upstream reported no usage, contradictory usage, or the stream
	// ended before its terminal event. Unreliable usage is never charged.
	Reliable bool
	// Why explains an unreliable record, for logs and the request record.
	Why string
}

// Unreliable is a record that must not be charged.
func Unreliable(why string) Usage { return Usage{Why: why} }

// TotalInput is every input token, cached or not.
func (u Usage) TotalInput() int64 { return u.Input + u.CachedInput + u.CacheWrite }

func contradiction(format string, args ...any) Usage {
	return Unreliable("contradictory usage: " + fmt.Sprintf(format, args...))
}

// fromInclusive normalises the convention where the prompt count includes its cached and
// cache-write subsets (OpenAI chat and responses, Gemini).
func fromInclusive(prompt, cached, write, output, reasoning int64) Usage {
	// Plain ifs rather than a tagless switch: coverage tools count a case expression as never
	// run, which would hide these checks from mutation testing.
	if prompt < 0 || cached < 0 || write < 0 || output < 0 || reasoning < 0 {
		return contradiction("negative count")
	}
	if cached+write > prompt {
		return contradiction("cached (%d) and cache-write (%d) tokens exceed the prompt (%d)", cached, write, prompt)
	}
	if reasoning > output {
		return contradiction("reasoning (%d) exceeds output (%d)", reasoning, output)
	}
	return Usage{Input: prompt - cached - write, CachedInput: cached, CacheWrite: write, Output: output, Reasoning: reasoning, Reliable: true}
}

// FromOpenAIChat normalises chat-completions usage: cached tokens are a subset of the prompt.
// It reads the few fields it needs without reflection: this runs once per answer on the
// passthrough path.
func FromOpenAIChat(raw json.RawMessage) Usage {
	if n, ok := plainChatCounts(raw); ok {
		return fromInclusive(n[0], n[3], n[4], n[1], n[5])
	}
	return fromOpenAIChatRead(raw)
}

// fromOpenAIChatRead is FromOpenAIChat of every shape: the tokenizer's one pass, gjson for
// what it leaves.
func fromOpenAIChatRead(raw []byte) Usage {
	if len(raw) == 0 || string(raw) == "null" {
		return Unreliable("no usage reported")
	}
	if n, ok := openAIChatCounts(raw); ok { // checked as it is read: valid JSON
		return fromInclusive(n[0], n[3], n[4], n[1], n[5])
	}
	if !gjson.ValidBytes(raw) {
		return Unreliable("usage not decodable")
	}
	return fromOpenAIChatFields(raw)
}

// openAIChatCounts is what fromOpenAIChatFields counts, read in one pass without gjson for a
// usage object of the usual shape: no name twice in an object (the Reader refuses it), each
// count a whole number written as one below 2^53 (a float64 holds it exactly, as gjson reads
// numbers), the details as objects, total_tokens the sum. Anything else reports !ok and takes
// the general way, with its own messages. n holds prompt, completion, total, cached,
// cache-write and reasoning.
func openAIChatCounts(raw []byte) (n [6]int64, ok bool) {
	s := strictjson.NewReader(raw)
	defer s.Done()
	var seen uint8
	count := func(i int) bool {
		var ok bool
		n[i], ok = s.Integer(64)
		seen |= 1 << i
		return ok && n[i] > -1<<53 && n[i] < 1<<53
	}
	ok = s.Object(func(key []byte) bool {
		switch string(key) {
		case "prompt_tokens":
			return count(0)
		case "completion_tokens":
			return count(1)
		case "total_tokens":
			return count(2)
		case "prompt_tokens_details":
			return s.Object(func(key []byte) bool {
				switch string(key) {
				case "cached_tokens":
					return count(3)
				case "cache_write_tokens":
					return count(4)
				}
				return s.Skip()
			})
		case "completion_tokens_details":
			return s.Object(func(key []byte) bool {
				if string(key) == "reasoning_tokens" {
					return count(5)
				}
				return s.Skip()
			})
		}
		return s.Skip()
	}) && s.End()
	return n, ok && seen&3 == 3 && (seen&4 == 0 || n[2] == n[0]+n[1])
}

// fromOpenAIChatFields is FromOpenAIChat of valid JSON, read with gjson: every shape.
func fromOpenAIChatFields(raw []byte) Usage {
	obj := gjson.ParseBytes(raw)
	if !obj.IsObject() {
		return Unreliable("usage not decodable")
	}
	f := openAIChatFields(obj)
	var n [6]int64
	for i, r := range f {
		if !r.Exists() || r.Type == gjson.Null {
			continue
		}
		if r.Type != gjson.Number || r.Num != float64(int64(r.Num)) {
			return Unreliable("usage not decodable: " + r.Raw + " is not a token count")
		}
		n[i] = int64(r.Num)
	}
	prompt, completion, total := f[0], f[1], f[2]
	if !prompt.Exists() || prompt.Type == gjson.Null || !completion.Exists() || completion.Type == gjson.Null {
		return Unreliable("usage lacks prompt or completion tokens")
	}
	if total.Exists() && total.Type != gjson.Null && n[2] != n[0]+n[1] {
		return contradiction("total %d is not prompt %d + completion %d", n[2], n[0], n[1])
	}
	return fromInclusive(n[0], n[3], n[4], n[1], n[5])
}

// openAIChatFields reads, in one pass over the usage object, what gjson.Get would find at
// prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details.cached_tokens,
// prompt_tokens_details.cache_write_tokens and completion_tokens_details.reasoning_tokens
// (the first of duplicate keys, and for the nested counts the first duplicate object that
// has them, as Get): six Gets would scan it six times.
func openAIChatFields(obj gjson.Result) [6]gjson.Result {
	var f [6]gjson.Result
	first := func(i int, v gjson.Result) {
		if !f[i].Exists() {
			f[i] = v
		}
	}
	obj.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "prompt_tokens":
			first(0, v)
		case "completion_tokens":
			first(1, v)
		case "total_tokens":
			first(2, v)
		case "prompt_tokens_details":
			if v.IsObject() {
				v.ForEach(func(k, v gjson.Result) bool {
					switch k.Str {
					case "cached_tokens":
						first(3, v)
					case "cache_write_tokens":
						first(4, v)
					}
					return true
				})
			}
		case "completion_tokens_details":
			if v.IsObject() {
				v.ForEach(func(k, v gjson.Result) bool {
					if k.Str == "reasoning_tokens" {
						first(5, v)
					}
					return true
				})
			}
		}
		return true
	})
	return f
}

// OpenAIResponses is the responses usage object.
type OpenAIResponses struct {
	InputTokens        *int64 `json:"input_tokens"`
	OutputTokens       *int64 `json:"output_tokens"`
	TotalTokens        *int64 `json:"total_tokens"`
	InputTokensDetails *struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

// FromOpenAIResponses normalises responses usage (same inclusive convention as chat).
func FromOpenAIResponses(raw json.RawMessage) Usage {
	var u OpenAIResponses
	if len(raw) == 0 || string(raw) == "null" {
		return Unreliable("no usage reported")
	}
	if err := json.Unmarshal(raw, &u); err != nil {
		return Unreliable("usage not decodable: " + err.Error())
	}
	if u.InputTokens == nil || u.OutputTokens == nil {
		return Unreliable("usage lacks input or output tokens")
	}
	var cached, write, reasoning int64
	if d := u.InputTokensDetails; d != nil {
		cached, write = d.CachedTokens, d.CacheWriteTokens
	}
	if d := u.OutputTokensDetails; d != nil {
		reasoning = d.ReasoningTokens
	}
	if u.TotalTokens != nil && *u.TotalTokens != *u.InputTokens+*u.OutputTokens {
		return contradiction("total %d is not input %d + output %d", *u.TotalTokens, *u.InputTokens, *u.OutputTokens)
	}
	return fromInclusive(*u.InputTokens, cached, write, *u.OutputTokens, reasoning)
}

// Anthropic is the messages usage object; its cache buckets are separate from input_tokens.
type Anthropic struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	OutputTokensDetails      *struct {
		ThinkingTokens int64 `json:"thinking_tokens"`
	} `json:"output_tokens_details"`
}

// Merge overlays a later usage object of the same stream: message_delta repeats cumulative
// values, so fields present later overwrite, and are never added.
func (a *Anthropic) Merge(later Anthropic) {
	if later.InputTokens != nil {
		a.InputTokens = later.InputTokens
	}
	if later.OutputTokens != nil {
		a.OutputTokens = later.OutputTokens
	}
	if later.CacheCreationInputTokens != nil {
		a.CacheCreationInputTokens = later.CacheCreationInputTokens
	}
	if later.CacheReadInputTokens != nil {
		a.CacheReadInputTokens = later.CacheReadInputTokens
	}
	if later.OutputTokensDetails != nil {
		a.OutputTokensDetails = later.OutputTokensDetails
	}
}

// Usage normalises the merged object.
func (a Anthropic) Usage() Usage {
	if a.InputTokens == nil || a.OutputTokens == nil {
		return Unreliable("usage lacks input or output tokens")
	}
	val := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	in, out, write, read := *a.InputTokens, *a.OutputTokens, val(a.CacheCreationInputTokens), val(a.CacheReadInputTokens)
	var reasoning int64
	if a.OutputTokensDetails != nil {
		reasoning = a.OutputTokensDetails.ThinkingTokens
	}
	if in < 0 || out < 0 || write < 0 || read < 0 || reasoning < 0 {
		return contradiction("negative count")
	}
	if reasoning > out {
		return contradiction("thinking (%d) exceeds output (%d)", reasoning, out)
	}
	return Usage{Input: in, CachedInput: read, CacheWrite: write, Output: out, Reasoning: reasoning, Reliable: true}
}

// FromAnthropic normalises one complete messages usage object.
func FromAnthropic(raw json.RawMessage) Usage {
	var a Anthropic
	if len(raw) == 0 || string(raw) == "null" {
		return Unreliable("no usage reported")
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return Unreliable("usage not decodable: " + err.Error())
	}
	return a.Usage()
}

// Gemini is the usageMetadata object; every stream chunk carries the cumulative value, so the
// last one wins.
type Gemini struct {
	PromptTokenCount        *int64 `json:"promptTokenCount"`
	CandidatesTokenCount    *int64 `json:"candidatesTokenCount"`
	CachedContentTokenCount int64  `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int64  `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int64  `json:"toolUsePromptTokenCount"`
	TotalTokenCount         *int64 `json:"totalTokenCount"`
}

// FromGemini normalises usageMetadata: cached content is inside promptTokenCount, thoughts are
// outside candidatesTokenCount, tool-use prompt tokens are extra input.
func FromGemini(raw json.RawMessage) Usage {
	var g Gemini
	if len(raw) == 0 || string(raw) == "null" {
		return Unreliable("no usage reported")
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		return Unreliable("usage not decodable: " + err.Error())
	}
	if g.PromptTokenCount == nil {
		return Unreliable("usage lacks promptTokenCount")
	}
	var candidates int64
	if g.CandidatesTokenCount != nil {
		candidates = *g.CandidatesTokenCount // absent when the model produced nothing
	}
	prompt := *g.PromptTokenCount + g.ToolUsePromptTokenCount
	output := candidates + g.ThoughtsTokenCount
	if g.TotalTokenCount != nil && *g.TotalTokenCount != prompt+output {
		return contradiction("totalTokenCount %d is not prompt %d + output %d", *g.TotalTokenCount, prompt, output)
	}
	return fromInclusive(prompt, g.CachedContentTokenCount, 0, output, g.ThoughtsTokenCount)
}
