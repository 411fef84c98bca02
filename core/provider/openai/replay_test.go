package openai

import (
	"testing"

	"github.com/tidwall/gjson"
)

// The stored conversation's items reach a responses upstream without the gateway's ids and
// without reasoning made elsewhere; the request's own items go as sent.
func TestReplayChain(t *testing.T) {
	body := []byte(`{"model":"up","input":[` +
		`{"type":"message","id":"msg_gw","role":"user","content":"a"},` +
		`{"type":"reasoning","id":"rs_gw","summary":[],"encrypted_content":"gw.toolsig:x"},` +
		`{"type":"function_call","id":"fc_gw","call_id":"c1","name":"f","arguments":"{}"},` +
		`{"type":"function_call_output","id":"fco_gw","call_id":"c1","output":"ok"},` +
		`{"type":"reasoning","id":"rs_own","summary":[]},` +
		`{"type":"message","id":"msg_own","role":"user","content":"b"}]}`)
	out, err := replayChain(body, 4)
	if err != nil {
		t.Fatal(err)
	}
	if got := gjson.GetBytes(out, "input.#.type").Raw; got != `["message","function_call","function_call_output","reasoning","message"]` {
		t.Errorf("types %s", got)
	}
	if got := gjson.GetBytes(out, "input.#.id").Raw; got != `["rs_own","msg_own"]` {
		t.Errorf("ids %s", got)
	}
	if gjson.GetBytes(out, "model").String() != "up" || gjson.GetBytes(out, "input.1.call_id").String() != "c1" {
		t.Errorf("other fields changed: %s", out)
	}
}
