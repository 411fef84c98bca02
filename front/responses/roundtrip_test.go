package responses

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	corev1 "modelgateway/gen/gateway/core/v1"
)

// A client echoes the previous output items as the next input (Codex does, with store:false).
// What other protocols need back — thinking signatures, redacted thinking, a function call's
// signature, the tool's namespace — must come back into the canonical request.
func TestOutputItemsRoundTripAsInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		answer string // the encoder case whose output is echoed
		extra  string // items the client adds after them
		want   []*corev1.Message
	}{
		{"reasoning signature and redacted thinking come back", "reasoning", `{"role":"user","content":"and 3+3?"}`,
			[]*corev1.Message{
				user(text("2+2?")),
				assistant(thinking(&corev1.Thinking{Text: "Adding two and two.", Signature: "EqQBCkgIAxABGAIiQL"}),
					thinking(&corev1.Thinking{RedactedData: "EmwKAhgBEgy3va3pzix"}), text("4")),
				user(text("and 3+3?"))}},
		{"a namespaced call gets its canonical name and its signature back", "namespaced_tool_with_signature",
			`{"type":"function_call_output","call_id":"call_g1","output":"Ada Lovelace"},{"type":"function_call_output","call_id":"call_001","output":"none"}`,
			[]*corev1.Message{
				user(text("find Ada")),
				assistant(call("call_g1", "crm__lookup", `{"name":"Ada"}`, "CiQB0e2Kb"), call("call_001", "crm__lookup", "{}", "")),
				user(result("call_g1", "crm__lookup", "Ada Lovelace"), result("call_001", "crm__lookup", "none"))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var c encCase
			for _, ec := range encCases {
				if ec.name == tc.answer {
					c = ec
				}
			}
			var first struct {
				Input json.RawMessage `json:"input"`
			}
			if err := json.Unmarshal([]byte(c.body), &first); err != nil {
				t.Fatal(err)
			}
			var answer struct {
				Output []json.RawMessage `json:"output"`
			}
			if err := json.Unmarshal(run(t, c, false).Body.Bytes(), &answer); err != nil {
				t.Fatal(err)
			}
			items := []json.RawMessage{json.RawMessage(`{"role":"user","content":` + string(first.Input) + `}`)}
			items = append(items, answer.Output...)
			input, _ := json.Marshal(items)
			body := `{"model":"team/model","store":false,"input":` + string(input[:len(input)-1]) + `,` + tc.extra + `]}`
			got, apiErr := decode(t, Protocol{}, body)
			if apiErr != nil {
				t.Fatalf("%v\n%s", apiErr, body)
			}
			if diff := cmp.Diff(tc.want, got.GetMessages(), protocmp.Transform()); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}
