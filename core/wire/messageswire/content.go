package messageswire

import (
	"bytes"
	"encoding/json"
	"modelgateway/core/wire/strictjson"
)

// Block types.
const (
	BlockText             = "text"
	BlockImage            = "image"
	BlockDocument         = "document"
	BlockToolUse          = "tool_use"
	BlockToolResult       = "tool_result"
	BlockThinking         = "thinking"
	BlockRedactedThinking = "redacted_thinking"
)

// Content is a list of content blocks. On the wire it is either a string (one text block) or
// an array of blocks; both decode into the list, which always encodes as an array.
type Content []ContentBlock

// UnmarshalJSON accepts the string shorthand.
func (c *Content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := strictjson.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Content{{Type: BlockText, Text: s}}
		return nil
	}
	if string(b) == "null" {
		*c = nil
		return nil
	}
	var blocks []ContentBlock
	if err := strictjson.Unmarshal(b, &blocks); err != nil {
		return err
	}
	*c = blocks
	return nil
}

// ContentBlock is the union of every block the gateway reads or writes. Decoding fills the
// fields of whichever type arrived; encoding writes exactly the fields its Type has, with the
// empty values the protocol requires (a streaming text block starts as {"type":"text","text":""}).
type ContentBlock struct {
	Type string `json:"type"`

	// text
	Text      string          `json:"text,omitempty"`
	Citations json.RawMessage `json:"citations,omitempty"`

	// image, document
	Source  *Source `json:"source,omitempty"`
	Title   string  `json:"title,omitempty"`
	Context string  `json:"context,omitempty"`

	// tool_use (and server_tool_use)
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`

	// tool_result
	ToolUseID     string  `json:"tool_use_id,omitempty"`
	ResultContent Content `json:"content,omitempty"`
	IsError       bool    `json:"is_error,omitempty"`

	// thinking, redacted_thinking
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`

	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// Source is where an image or document comes from.
type Source struct {
	// Type is base64, url, text or file.
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
	FileID    string `json:"file_id,omitempty"`
}

// Source types.
const (
	SourceBase64 = "base64"
	SourceURL    = "url"
	SourceText   = "text"
)

// The per-type shapes used for encoding. Required fields have no omitempty.
type (
	textOut struct {
		Type         string          `json:"type"`
		Text         string          `json:"text"`
		Citations    json.RawMessage `json:"citations,omitempty"`
		CacheControl json.RawMessage `json:"cache_control,omitempty"`
	}
	toolUseOut struct {
		Type         string          `json:"type"`
		ID           string          `json:"id"`
		Name         string          `json:"name"`
		Input        json.RawMessage `json:"input"`
		CacheControl json.RawMessage `json:"cache_control,omitempty"`
	}
	toolResultOut struct {
		Type         string          `json:"type"`
		ToolUseID    string          `json:"tool_use_id"`
		Content      Content         `json:"content,omitempty"`
		IsError      bool            `json:"is_error,omitempty"`
		CacheControl json.RawMessage `json:"cache_control,omitempty"`
	}
	thinkingOut struct {
		Type      string `json:"type"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
	}
	redactedOut struct {
		Type string `json:"type"`
		Data string `json:"data"`
	}
	sourceOut struct {
		Type         string          `json:"type"`
		Source       *Source         `json:"source"`
		Title        string          `json:"title,omitempty"`
		Context      string          `json:"context,omitempty"`
		Citations    json.RawMessage `json:"citations,omitempty"`
		CacheControl json.RawMessage `json:"cache_control,omitempty"`
	}
)

var emptyObject = json.RawMessage(`{}`)

// MarshalJSON writes the fields of the block's type only.
func (b ContentBlock) MarshalJSON() ([]byte, error) {
	switch b.Type {
	case BlockText:
		return json.Marshal(textOut{b.Type, b.Text, b.Citations, b.CacheControl})
	case BlockToolUse, "server_tool_use":
		in := b.Input
		if len(in) == 0 {
			in = emptyObject
		}
		return json.Marshal(toolUseOut{b.Type, b.ID, b.Name, in, b.CacheControl})
	case BlockToolResult:
		return json.Marshal(toolResultOut{b.Type, b.ToolUseID, b.ResultContent, b.IsError, b.CacheControl})
	case BlockThinking:
		return json.Marshal(thinkingOut{b.Type, b.Thinking, b.Signature})
	case BlockRedactedThinking:
		return json.Marshal(redactedOut{b.Type, b.Data})
	case BlockImage, BlockDocument:
		return json.Marshal(sourceOut{b.Type, b.Source, b.Title, b.Context, b.Citations, b.CacheControl})
	}
	type plain ContentBlock // no MarshalJSON: every non-empty field
	return json.Marshal(plain(b))
}

// JoinText concatenates the text blocks of c with sep, skipping every other block.
func (c Content) JoinText(sep string) string {
	n := 0
	var only string
	for i := range c {
		if c[i].Type == BlockText {
			n++
			only = c[i].Text
		}
	}
	if n <= 1 {
		return only
	}
	var buf bytes.Buffer
	first := true
	for i := range c {
		if c[i].Type != BlockText {
			continue
		}
		if !first {
			buf.WriteString(sep)
		}
		first = false
		buf.WriteString(c[i].Text)
	}
	return buf.String()
}
