package chatcompletions

import (
	"encoding/json"
	"testing"

	"modelgateway/core/wire/chatwire"
	"modelgateway/core/wire/strictjson"
)

// A string content reads as the strict reader reads it, on the fast path and off it, and a
// malformed one is refused with its message.
func TestStringContentMatchesTheStrictReader(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`"hello #sim:input=20000"`, `""`, `"a\"b \\ \/ \n\t"`, `"\u00e9t\u00e9 \ud83d\ude00"`, `"日本語"`,
		"\"bad \xff utf8\"", `"\ud83d alone"`, `"trailing space" `,
	} {
		var want string
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		parts, apiErr := content(json.RawMessage(raw), 0)
		if apiErr != nil || len(parts) != 1 || parts[0].Type != chatwire.PartText || parts[0].Text != want {
			t.Errorf("%s: %+v %v, want the text %q", raw, parts, apiErr, want)
		}
	}
	for _, raw := range []string{`"unterminated`, "\"raw\ncontrol\"", `"bad \x escape"`, `"a" "b"`} {
		var s string
		want := strictjson.Unmarshal([]byte(raw), &s)
		if _, apiErr := content(json.RawMessage(raw), 3); apiErr == nil || apiErr.Message != "messages[3].content: "+want.Error() {
			t.Errorf("%q: %v, want the message of %v", raw, apiErr, want)
		}
	}
}
