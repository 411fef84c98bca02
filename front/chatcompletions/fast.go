package chatcompletions

import (
	"encoding/json"

	"modelgateway/core/wire/chatwire"
	"modelgateway/core/wire/jsontext"
	"modelgateway/core/wire/strictjson"
)

// decodeRequest is strictjson.Unmarshal(body, in), in one pass without reflection for the
// requests most clients send: a model, messages of a role and a content, and scalar options.
// Any other body, and any body the fast pass is not sure to read as the strict reader does (an
// unknown or repeated key, a null, a number of another form, tools, a stop list), goes through
// strictjson: the same result, and the same error text. Like the strict reader, the fast pass
// matches names exactly; the body has passed strictjson.Check (relay.ReadJSON).
func decodeRequest(body []byte, in *chatwire.Request) error {
	if json.Valid(body) {
		var fast chatwire.Request
		if fastRequest(jsontext.NewScanner(body), &fast) {
			*in = fast
			return nil
		}
	}
	return strictjson.Unmarshal(body, in)
}

// Fields of a request, numbered for jsontext.Seen: a key seen twice is left to the strict
// reader, which refuses it.
const (
	fModel = iota
	fMessages
	fStream
	fStreamOptions
	fMaxCompletionTokens
	fMaxTokens
	fTemperature
	fTopP
	fN
	fPresencePenalty
	fFrequencyPenalty
	fSeed
	fLogprobs
	fTopLogprobs
	fParallelToolCalls
	fReasoningEffort
	fUser
	fSafetyIdentifier
	fPromptCacheKey
)

// fastRequest reads a request of the usual shape into r; false: leave the body to
// encoding/json.
func fastRequest(s *jsontext.Scanner, r *chatwire.Request) bool {
	var seen jsontext.Seen
	once := seen.First
	return s.Object(func(key []byte) bool {
		switch string(key) {
		case "model":
			var ok bool
			r.Model, ok = s.String()
			return once(fModel) && ok
		case "messages":
			return once(fMessages) && fastMessages(s, r)
		case "stream":
			return once(fStream) && boolPtr(s, &r.Stream)
		case "stream_options":
			return once(fStreamOptions) && fastStreamOptions(s, r)
		case "max_completion_tokens":
			return once(fMaxCompletionTokens) && int64Ptr(s, &r.MaxCompletionTokens)
		case "max_tokens":
			return once(fMaxTokens) && int64Ptr(s, &r.MaxTokens)
		case "seed":
			return once(fSeed) && int64Ptr(s, &r.Seed)
		case "n":
			return once(fN) && int32Ptr(s, &r.N)
		case "top_logprobs":
			return once(fTopLogprobs) && int32Ptr(s, &r.TopLogprobs)
		case "temperature":
			return once(fTemperature) && floatPtr(s, &r.Temperature)
		case "top_p":
			return once(fTopP) && floatPtr(s, &r.TopP)
		case "presence_penalty":
			return once(fPresencePenalty) && floatPtr(s, &r.PresencePenalty)
		case "frequency_penalty":
			return once(fFrequencyPenalty) && floatPtr(s, &r.FrequencyPenalty)
		case "logprobs":
			return once(fLogprobs) && boolPtr(s, &r.Logprobs)
		case "parallel_tool_calls":
			return once(fParallelToolCalls) && boolPtr(s, &r.ParallelToolCalls)
		case "reasoning_effort":
			return once(fReasoningEffort) && stringPtr(s, &r.ReasoningEffort)
		case "user":
			return once(fUser) && stringPtr(s, &r.User)
		case "safety_identifier":
			return once(fSafetyIdentifier) && stringPtr(s, &r.SafetyIdentifier)
		case "prompt_cache_key":
			return once(fPromptCacheKey) && stringPtr(s, &r.PromptCacheKey)
		}
		return false
	}) // and nothing follows: the body is valid JSON
}

func fastMessages(s *jsontext.Scanner, r *chatwire.Request) bool {
	r.Messages = []chatwire.Message{} // empty, not absent, as encoding/json leaves []
	return s.Array(func() bool {
		var m chatwire.Message
		var seen jsontext.Seen
		once := seen.First
		ok := s.Object(func(key []byte) bool {
			var ok bool
			switch string(key) {
			case "role":
				m.Role, ok = s.String()
				return once(0) && ok
			case "content":
				if s.Peek() == 'n' {
					return false // null: left to encoding/json
				}
				m.Content = s.Raw()
				return once(1)
			case "name":
				m.Name, ok = s.String()
				return once(2) && ok
			case "tool_call_id":
				m.ToolCallID, ok = s.String()
				return once(3) && ok
			}
			return false
		})
		r.Messages = append(r.Messages, m)
		return ok
	})
}

func fastStreamOptions(s *jsontext.Scanner, r *chatwire.Request) bool {
	o := &chatwire.StreamOptions{}
	var seen jsontext.Seen
	r.StreamOptions = o
	return s.Object(func(key []byte) bool {
		if string(key) != "include_usage" || !seen.First(0) {
			return false
		}
		var ok bool
		o.IncludeUsage, ok = s.Bool()
		return ok
	})
}

func boolPtr(s *jsontext.Scanner, p **bool) bool {
	b, ok := s.Bool()
	*p = &b
	return ok
}

func stringPtr(s *jsontext.Scanner, p **string) bool {
	str, ok := s.String()
	*p = &str
	return ok
}

func int64Ptr(s *jsontext.Scanner, p **int64) bool {
	n, ok := s.Integer(64)
	*p = &n
	return ok
}

func int32Ptr(s *jsontext.Scanner, p **int32) bool {
	n, ok := s.Integer(32)
	v := int32(n)
	*p = &v
	return ok
}

func floatPtr(s *jsontext.Scanner, p **float64) bool {
	f, ok := s.Float()
	*p = &f
	return ok
}
