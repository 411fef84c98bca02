package chatcompletions

import (
	"encoding/json"
	"reflect"
	"testing"

	"modelgateway/core/wire/chatwire"
	"modelgateway/core/wire/strictjson"
)

// sameAsStrict fails t when the fast pass reads body other than the strict reader does, and
// tells whether the fast pass read it. The fast pass checks what it reads, so any bytes are
// compared, not only those strictjson.Check passes (relay.ReadJSON).
func sameAsStrict(t *testing.T, body []byte) bool {
	t.Helper()
	var want chatwire.Request
	wantErr := strictjson.Unmarshal(body, &want)
	var got chatwire.Request
	r := strictjson.NewReader(body)
	fast := fastRequest(r, &got) && r.End()
	r.Done()
	if !fast {
		return false
	}
	if wantErr != nil {
		t.Fatalf("fast pass read %s, the strict reader refuses it: %v", body, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("fast pass read %s\nas   %s\nnot  %s", body, g, w)
	}
	return true
}

var fastSeeds = []struct {
	name, body string
	fast       bool // read by the fast pass
}{
	{"the bench's request", `{"model":"bench-gpt","messages":[{"role":"user","content":"hello #sim:input=20000"}]}`, true},
	{"an SDK's streamed request", ` {"messages": [{"content": "You are terse.", "role": "system"}, {"content": "hi", "role": "user"}],
		"model": "gpt-4o", "max_completion_tokens": 64, "stream": true, "stream_options": {"include_usage": true}, "temperature": 0.2} `, true},
	{"every scalar option", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a\"}]"}]},{"role":"tool","tool_call_id":"c1","content":"r","name":"f"}],
		"max_tokens":5,"seed":-7,"n":2,"top_logprobs":3,"top_p":1,"presence_penalty":-0.5,"frequency_penalty":1e-3,"logprobs":false,
		"parallel_tool_calls":true,"reasoning_effort":"low","user":"u","safety_identifier":"s","stream":false}`, true},
	{"escapes in strings", "{\"model\":\"m\\u00e9\\n\",\"messages\":[{\"role\":\"user\",\"content\":\"\\ud83d\\ude00\"}]}", true},
	{"invalid UTF-8", "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", false},
	{"no messages", `{"model":"m","messages":[]}`, true},
	{"an empty object", `{}`, true},
	{"a content object", `{"model":"m","messages":[{"role":"user","content":{"a":[1,{"b":"}"}]}}]}`, true},
	{"a content number", `{"model":"m","messages":[{"role":"user","content":12.5e3}]}`, true},
	{"a null content", `{"model":"m","messages":[{"role":"assistant","content":null}]}`, false},
	{"a null option", `{"model":"m","messages":[],"temperature":null}`, false},
	{"an unknown key", `{"model":"m","messages":[],"metadata":{}}`, false},
	{"a key in other case", `{"Model":"m","messages":[]}`, false},
	{"an escaped key", `{"mod\u0065l":"m","messages":[]}`, true},
	{"a repeated key", `{"model":"a","model":"b","messages":[]}`, false},
	{"a repeated message key", `{"model":"a","messages":[{"role":"user","role":"system","content":"x"}]}`, false},
	{"tools", `{"model":"m","messages":[],"tools":[]}`, false},
	{"a fraction for an integer", `{"model":"m","messages":[],"max_tokens":1.5}`, false},
	{"an exponent for an integer", `{"model":"m","messages":[],"seed":1e2}`, false},
	{"an int32 out of range", `{"model":"m","messages":[],"n":2147483648}`, false},
	{"the int32 and int64 edges", `{"model":"m","messages":[],"n":-2147483648,"top_logprobs":2147483647,"seed":-9223372036854775808,"max_tokens":9223372036854775807,"max_completion_tokens":-0}`, true},
	{"an int64 out of range", `{"model":"m","messages":[],"seed":-9223372036854775809}`, false},
	{"a float out of range", `{"model":"m","messages":[],"temperature":1e400}`, false},
	{"a string for a number", `{"model":"m","messages":[],"max_tokens":"5"}`, false},
	{"a number for the model", `{"model":5,"messages":[]}`, false},
	{"an array body", `[{"model":"m"}]`, false},
	{"invalid JSON", `{"model":"m","messages":[}`, false},
	{"trailing data", `{"model":"m"} {}`, false},
	{"tool calls", `{"model":"m","messages":[{"role":"assistant","tool_calls":[]}]}`, false},
}

func TestFastDecodeReadsAsTheStrictReader(t *testing.T) {
	t.Parallel()
	for _, s := range fastSeeds {
		if fast := sameAsStrict(t, []byte(s.body)); fast != s.fast {
			t.Errorf("%s: fast pass %v, want %v", s.name, fast, s.fast)
		}
	}
}

// FuzzFastDecode: whatever the fast pass reads, it reads as the strict reader does.
func FuzzFastDecode(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) { sameAsStrict(t, body) })
}
