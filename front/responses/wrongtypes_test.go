package responses

import (
	"net/http/httptest"
	"testing"

	rw "modelgateway/core/wire/responseswire"
	"modelgateway/core/wire/strictjson/strictjsontest"
)

// A body of the wrong shape is refused in the protocol's words: the member and the kind of
// value expected, never a Go type (issue 38).
func TestWrongTypesAreRefusedInTheProtocolsWords(t *testing.T) {
	t.Parallel()
	base := `{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}],"instructions":"x","tools":[{"type":"function","name":"f","parameters":{}}],"text":{"format":{"type":"text"}},"reasoning":{"effort":"low"}}`
	var paths [][]string
	paths = append(paths, strictjsontest.Members(rw.Request{})...)
	paths = append(paths, strictjsontest.Members(rw.InputItem{}, "input", "0")...)
	paths = append(paths, strictjsontest.Members(rw.ContentPart{}, "input", "0", "content", "0")...)
	paths = append(paths, strictjsontest.Members(rw.Tool{}, "tools", "0")...)
	paths = append(paths, strictjsontest.Members(rw.TextConfig{}, "text")...)
	paths = append(paths, strictjsontest.Members(rw.ReasoningParam{}, "reasoning")...)
	strictjsontest.CheckWrongTypes(t, base, paths, func(body []byte) string {
		r := httptest.NewRequest("POST", "/v1/responses", nil)
		r.Header.Set("anthropic-version", "2023-06-01")
		if _, err := (Protocol{}).Decode(r, body); err != nil {
			return err.Message
		}
		return ""
	})
}
