package responseswire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestInputKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw  string
		want int
	}{
		{"", InputAbsent}, {"null", InputAbsent}, {` "Hi"`, InputString}, {"\n[{}]", InputItems}, {"3", -1}, {"{}", -1},
	} {
		if got := InputKind(json.RawMessage(tc.raw)); got != tc.want {
			t.Errorf("InputKind(%q) = %d, want %d", tc.raw, got, tc.want)
		}
	}
}

func TestContentPartsAcceptsTheEasyStringForm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, raw string
		want      []ContentPart
	}{
		{"a string is one input_text part", `"Hi"`, []ContentPart{{Type: PartInputText, Text: "Hi"}}},
		{"an array keeps its parts", `[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"https://x","detail":"low"}]`,
			[]ContentPart{{Type: PartInputText, Text: "a"}, {Type: PartInputImage, ImageURL: "https://x", Detail: "low"}}},
		{"null is no content", `null`, nil},
	} {
		got, err := ContentParts(json.RawMessage(tc.raw))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	if _, err := ContentParts(json.RawMessage(`5`)); err == nil {
		t.Error("a number was accepted as content")
	}
}

// The spec requires these keys on every Response, null or not; output is always an array.
func TestResponseRendersRequiredKeys(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(&Response{ID: "resp_1", Object: ObjectResponse, Output: []OutputItem{
		&MessageItem{Type: ItemMessage, ID: "msg_1", Status: StatusCompleted, Role: RoleAssistant, Content: []OutputText{NewOutputText("Hi")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"error":null`, `"incomplete_details":null`, `"instructions":null`, `"usage":null`,
		`"output":[{"type":"message"`, `"annotations":[]`, `"logprobs":[]`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("missing %s in %s", key, b)
		}
	}
}

func TestTerminalEvents(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		EventCompleted: true, EventIncomplete: true, EventFailed: true, EventError: true,
		EventCreated: false, EventOutputItemDone: false, "response.compaction.compacting": false,
	} {
		if IsTerminal(name) != want {
			t.Errorf("IsTerminal(%s) = %v", name, !want)
		}
	}
}
