package completions

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
	base := `{"model":"m","prompt":"hi","max_tokens":5,"stop":["a"],"logit_bias":{"1":2}}`
	var paths [][]string
	paths = append(paths, strictjsontest.Members(chatwire.CompletionRequest{})...)
	strictjsontest.CheckWrongTypes(t, base, paths, func(body []byte) string {
		r := httptest.NewRequest("POST", "/v1/completions", nil)
		r.Header.Set("anthropic-version", "2023-06-01")
		if _, err := (Protocol{}).Decode(r, body); err != nil {
			return err.Message
		}
		return ""
	})
}
