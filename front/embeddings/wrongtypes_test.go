package embeddings

import (
	"testing"

	"modelgateway/core/wire/strictjson/strictjsontest"
)

// A body of the wrong shape is refused in the protocol's words: the member and the kind of
// value expected, never a Go type (issue 38).
func TestWrongTypesAreRefusedInTheProtocolsWords(t *testing.T) {
	t.Parallel()
	strictjsontest.CheckWrongTypes(t, `{"model":"m","input":["a"],"dimensions":8,"encoding_format":"float","user":"u"}`,
		strictjsontest.Members(request{}), func(body []byte) string {
			if _, err := decode(body); err != nil {
				return err.Message
			}
			return ""
		})
}
