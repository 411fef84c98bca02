package messageswire

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestContentAcceptsStringAndBlocks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in string
		want     Content
	}{
		{"a string is one text block", `"hi"`, Content{{Type: BlockText, Text: "hi"}}},
		{"blocks stay blocks", `[{"type":"text","text":"a"},{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]`,
			Content{{Type: BlockText, Text: "a"}, {Type: BlockImage, Source: &Source{Type: SourceURL, URL: "https://x/y.png"}}}},
		{"null is empty", `null`, nil},
		{"tool_result content may itself be a string", `[{"type":"tool_result","tool_use_id":"t1","content":"42"}]`,
			Content{{Type: BlockToolResult, ToolUseID: "t1", ResultContent: Content{{Type: BlockText, Text: "42"}}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var got Content
			if err := json.Unmarshal([]byte(c.in), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestBlocksEncodeTheFieldsTheirTypeRequires(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   ContentBlock
		want string
	}{
		{"an empty text block keeps its text key", ContentBlock{Type: BlockText}, `{"type":"text","text":""}`},
		{"a tool_use block without input has an empty object", ContentBlock{Type: BlockToolUse, ID: "t", Name: "f"}, `{"type":"tool_use","id":"t","name":"f","input":{}}`},
		{"a thinking block has both keys", ContentBlock{Type: BlockThinking}, `{"type":"thinking","thinking":"","signature":""}`},
		{"redacted thinking carries data only", ContentBlock{Type: BlockRedactedThinking, Data: "x", Text: "ignored"}, `{"type":"redacted_thinking","data":"x"}`},
		{"a tool result with string content becomes blocks", ContentBlock{Type: BlockToolResult, ToolUseID: "t", ResultContent: Content{{Type: BlockText, Text: "ok"}}, IsError: true},
			`{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"ok"}],"is_error":true}`},
		{"an image keeps its source", ContentBlock{Type: BlockImage, Source: &Source{Type: SourceBase64, MediaType: "image/png", Data: "AA=="}},
			`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestJoinTextSkipsOtherBlocks(t *testing.T) {
	t.Parallel()
	c := Content{{Type: BlockText, Text: "a"}, {Type: BlockImage}, {Type: BlockText, Text: "b"}}
	if got := c.JoinText("\n\n"); got != "a\n\nb" {
		t.Errorf("got %q", got)
	}
}

func TestErrorStatusFollowsTheAPI(t *testing.T) {
	t.Parallel()
	for typ, want := range map[string]int{ErrOverloaded: 529, ErrRateLimit: 429, ErrInvalidRequest: 400, "something_new": 500} {
		if got := ErrorStatus(typ); got != want {
			t.Errorf("%s: got %d, want %d", typ, got, want)
		}
	}
}
