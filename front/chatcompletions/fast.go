package chatcompletions

import (
	"modelgateway/core/wire/chatwire"
	"modelgateway/core/wire/strictjson"
)

// decodeRequest is strictjson.Unmarshal(body, in), in one pass without reflection for the
// requests most clients send: a model, messages of a role and a content, and scalar options.
// Any other body, and any body the fast pass is not sure to read as Unmarshal does (an
// unknown key, a null, a number of another form, tools, a stop list), goes through
// Unmarshal: the same result, and the same error text. The fast pass reads with the strict
// reader's tokenizer (strictjson.Reader), which refuses what Check refuses, so it needs no
// check of its own before it.
func decodeRequest(body []byte, in *chatwire.Request) error {
	var fast chatwire.Request
	r := strictjson.NewReader(body)
	ok := fastRequest(r, &fast) && r.End()
	r.Done()
	if ok {
		*in = fast
		return nil
	}
	// Unmarshal into a request of its own: in, passed to Unmarshal, would move every caller's
	// request to the heap, an allocation per request that the fast path never needed.
	slow := new(chatwire.Request)
	err := strictjson.Unmarshal(body, slow)
	*in = *slow
	return err
}

// fastRequest reads a request of the usual shape into r; false: leave the body to Unmarshal.
// A name twice is a fault of the reader.
func fastRequest(s *strictjson.Reader, r *chatwire.Request) bool {
	return s.Object(func(key []byte) bool {
		switch string(key) {
		case "model":
			var ok bool
			r.Model, ok = s.String()
			return ok
		case "messages":
			return fastMessages(s, r)
		case "stream":
			return boolPtr(s, &r.Stream)
		case "stream_options":
			return fastStreamOptions(s, r)
		case "max_completion_tokens":
			return int64Ptr(s, &r.MaxCompletionTokens)
		case "max_tokens":
			return int64Ptr(s, &r.MaxTokens)
		case "seed":
			return int64Ptr(s, &r.Seed)
		case "n":
			return int32Ptr(s, &r.N)
		case "top_logprobs":
			return int32Ptr(s, &r.TopLogprobs)
		case "temperature":
			return floatPtr(s, &r.Temperature)
		case "top_p":
			return floatPtr(s, &r.TopP)
		case "presence_penalty":
			return floatPtr(s, &r.PresencePenalty)
		case "frequency_penalty":
			return floatPtr(s, &r.FrequencyPenalty)
		case "logprobs":
			return boolPtr(s, &r.Logprobs)
		case "parallel_tool_calls":
			return boolPtr(s, &r.ParallelToolCalls)
		case "reasoning_effort":
			return stringPtr(s, &r.ReasoningEffort)
		case "user":
			return stringPtr(s, &r.User)
		case "safety_identifier":
			return stringPtr(s, &r.SafetyIdentifier)
		case "prompt_cache_key":
			return stringPtr(s, &r.PromptCacheKey)
		}
		return false
	})
}

func fastMessages(s *strictjson.Reader, r *chatwire.Request) bool {
	r.Messages = []chatwire.Message{} // empty, not absent, as Unmarshal leaves []
	return s.Array(func() bool {
		var m chatwire.Message
		ok := s.Object(func(key []byte) bool {
			var ok bool
			switch string(key) {
			case "role":
				m.Role, ok = s.String()
			case "content":
				if s.Kind() != 'n' { // null: left to Unmarshal
					m.Content, ok = s.Raw()
				}
			case "name":
				m.Name, ok = s.String()
			case "tool_call_id":
				m.ToolCallID, ok = s.String()
			}
			return ok
		})
		r.Messages = append(r.Messages, m)
		return ok
	})
}

func fastStreamOptions(s *strictjson.Reader, r *chatwire.Request) bool {
	o := &chatwire.StreamOptions{}
	r.StreamOptions = o
	return s.Object(func(key []byte) bool {
		var ok bool
		if string(key) == "include_usage" {
			o.IncludeUsage, ok = s.Bool()
		}
		return ok
	})
}

func boolPtr(s *strictjson.Reader, p **bool) bool {
	b, ok := s.Bool()
	*p = &b
	return ok
}

func stringPtr(s *strictjson.Reader, p **string) bool {
	str, ok := s.String()
	*p = &str
	return ok
}

func int64Ptr(s *strictjson.Reader, p **int64) bool {
	n, ok := s.Integer(64)
	*p = &n
	return ok
}

func int32Ptr(s *strictjson.Reader, p **int32) bool {
	n, ok := s.Integer(32)
	v := int32(n)
	*p = &v
	return ok
}

func floatPtr(s *strictjson.Reader, p **float64) bool {
	f, ok := s.Float()
	*p = &f
	return ok
}
