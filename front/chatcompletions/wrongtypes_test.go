package chatcompletions

import (
	"net/http/httptest"
	"testing"

	"modelgateway/core/wire/chatwire"
	"modelgateway/core/wire/strictjson/strictjsontest"
)

// A body of the wrong shape is refused in the protocol's words: the member and the kind of
// value expected, never a Go type (issue 38).
func TestWrongTypesAreRefusedInTheProtocolsWords(t *testing.T) {
	t.Parallel()
	base := `{"model":"m","messages":[{"role":"user","content":"hi","name":"n"}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],
		"stream":true,"stream_options":{"include_usage":true},"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{}}}}`
	paths := strictjsontest.Members(chatwire.Request{})
	paths = append(paths, strictjsontest.Members(chatwire.Message{}, "messages", "0")...)
	paths = append(paths, strictjsontest.Members(chatwire.Tool{}, "tools", "0")...)
	paths = append(paths, strictjsontest.Members(chatwire.StreamOptions{}, "stream_options")...)
	strictjsontest.CheckWrongTypes(t, base, paths, func(body []byte) string {
		if _, err := (Protocol{}).Decode(httptest.NewRequest("POST", "/v1/chat/completions", nil), body); err != nil {
			return err.Message
		}
		return ""
	})
}
