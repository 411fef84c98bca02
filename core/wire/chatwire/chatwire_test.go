package chatwire

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStopAcceptsAStringOrAnArray(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in string
		want     StringList
		fails    bool
	}{
		{"a string is one stop sequence", `{"stop":"END"}`, StringList{"END"}, false},
		{"an array is kept in order", `{"stop":["a","b"]}`, StringList{"a", "b"}, false},
		{"null is none", `{"stop":null}`, nil, false},
		{"absent is none", `{}`, nil, false},
		{"a number is an error", `{"stop":5}`, nil, true},
		{"an array of numbers is an error", `{"stop":[1]}`, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var r Request
			err := json.Unmarshal([]byte(tc.in), &r)
			if (err != nil) != tc.fails {
				t.Fatalf("err = %v, want failure %v", err, tc.fails)
			}
			if diff := cmp.Diff(tc.want, r.Stop); !tc.fails && diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestChunkEncoding(t *testing.T) {
	t.Parallel()
	empty, stop := "", "stop"
	cases := []struct {
		name string
		in   Chunk
		want string
	}{
		{"a normal chunk carries usage null and no error key",
			Chunk{ID: "c", Object: ObjectChunk, Created: 1, Model: "m", Choices: []ChunkChoice{{Delta: Delta{Role: "assistant", Content: &empty}}}},
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`},
		{"a tool call opener says arguments \"\" explicitly",
			Chunk{Choices: []ChunkChoice{{Delta: Delta{ToolCalls: []ToolCallDelta{{Index: 1, ID: "call_1", Type: "function", Function: &FunctionDelta{Name: "f"}}}}}}},
			`{"id":"","object":"","created":0,"model":"","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}],"usage":null}`},
		{"the finish chunk has an empty delta",
			Chunk{Choices: []ChunkChoice{{FinishReason: &stop}}},
			`{"id":"","object":"","created":0,"model":"","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`},
		{"the usage chunk has choices []",
			Chunk{Choices: []ChunkChoice{}, Usage: json.RawMessage(`{"prompt_tokens":1}`)},
			`{"id":"","object":"","created":0,"model":"","choices":[],"usage":{"prompt_tokens":1}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(b)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewUsageCountsCachedTokensInsideThePrompt(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(NewUsage(10, 20, 5, 7, 3))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"prompt_tokens":35,"completion_tokens":7,"total_tokens":42,"prompt_tokens_details":{"cached_tokens":20,"cache_write_tokens":5},"completion_tokens_details":{"reasoning_tokens":3}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}
