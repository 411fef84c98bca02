package messages

import (
	"net/http/httptest"
	"testing"

	mw "modelgateway/core/wire/messageswire"
	"modelgateway/core/wire/strictjson/strictjsontest"
)

// A body of the wrong shape is refused in the protocol's words: the member and the kind of
// value expected, never a Go type (issue 38).
func TestWrongTypesAreRefusedInTheProtocolsWords(t *testing.T) {
	t.Parallel()
	base := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"system":"s","tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto"},"thinking":{"type":"enabled","budget_tokens":1024},"metadata":{"user_id":"u"}}`
	var paths [][]string
	paths = append(paths, strictjsontest.Members(mw.Request{})...)
	paths = append(paths, strictjsontest.Members(mw.MessageParam{}, "messages", "0")...)
	paths = append(paths, [][]string{{"messages", "0", "content", "0", "type"}, {"messages", "0", "content", "0", "text"}}...)
	paths = append(paths, strictjsontest.Members(mw.Tool{}, "tools", "0")...)
	paths = append(paths, strictjsontest.Members(mw.ToolChoice{}, "tool_choice")...)
	paths = append(paths, strictjsontest.Members(mw.Thinking{}, "thinking")...)
	paths = append(paths, strictjsontest.Members(mw.Metadata{}, "metadata")...)
	strictjsontest.CheckWrongTypes(t, base, paths, func(body []byte) string {
		r := httptest.NewRequest("POST", "/v1/messages", nil)
		r.Header.Set("anthropic-version", "2023-06-01")
		if _, err := (Protocol{}).Decode(r, body); err != nil {
			return err.Message
		}
		return ""
	})
}
