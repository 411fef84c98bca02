package chatcompletions

import (
	"encoding/json"
	"errors"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/chatwire"
	"modelgateway/core/wire/jsontext"
	"modelgateway/core/wire/strictjson"
)

// decodeMessages hoists system and developer messages into one system text (translation.md §1:
// other protocols have a single slot) and turns tool messages into tool_result parts of a
// user message, as the canonical model (and the messages protocol) wants them. Consecutive
// tool messages become one user message: messages upstreams require all results of one
// assistant turn together.
// The messages and the slice's first backing array come from room.
func decodeMessages(msgs []chatwire.Message, room *messageRoom) (string, []*corev1.Message, *apierror.Error) {
	var system []string
	out := room.ptrs[:0]
	names := map[string]string{} // tool call id → function name, for the tool messages
	lastWasTool := false
	for i, m := range msgs {
		isTool := false
		switch m.Role {
		case chatwire.RoleSystem, chatwire.RoleDeveloper:
			texts, err := textPieces(m.Content, i)
			if err != nil {
				return "", nil, err
			}
			system = append(system, texts...)
		case chatwire.RoleUser:
			parts, err := userParts(m.Content, i)
			if err != nil {
				return "", nil, err
			}
			out = append(out, room.message(corev1.Role_ROLE_USER, parts))
		case chatwire.RoleAssistant:
			parts, err := assistantParts(m, i, names)
			if err != nil {
				return "", nil, err
			}
			if len(parts) > 0 { // an empty assistant turn carries nothing and upsets some upstreams
				out = append(out, room.message(corev1.Role_ROLE_ASSISTANT, parts))
			}
		case chatwire.RoleTool:
			part, err := toolResult(m, i, names)
			if err != nil {
				return "", nil, err
			}
			if lastWasTool {
				prev := out[len(out)-1]
				prev.Parts = append(prev.Parts, part)
			} else {
				out = append(out, room.message(corev1.Role_ROLE_USER, []*corev1.Part{part}))
			}
			isTool = true
		case "":
			return "", nil, invalid("messages[%d].role is required", i)
		default:
			return "", nil, invalid("messages[%d].role %q is not supported", i, m.Role)
		}
		if m.Role != chatwire.RoleSystem && m.Role != chatwire.RoleDeveloper {
			lastWasTool = isTool
		}
	}
	if len(out) == 0 {
		return "", nil, invalid("messages must contain a user, assistant or tool message")
	}
	return joinText(system), out, nil
}

// content decodes a content field into parts: a string is one text part; absent or null is
// no parts.
func content(raw json.RawMessage, i int) ([]chatwire.ContentPart, *apierror.Error) {
	if !chatwire.Present(raw) {
		return nil, nil
	}
	if raw[0] == '"' {
		// Most contents are one string: read without encoding/json's reflection and state
		// (jsontext.String reads what it reads); anything else, errors included, goes through
		// encoding/json for its own result and message.
		if s, next, ok := jsontext.String(raw, 0); ok && next == len(raw) {
			return []chatwire.ContentPart{{Type: chatwire.PartText, Text: s}}, nil
		}
		var s string
		if err := strictjson.Unmarshal(raw, &s); err != nil {
			return nil, invalid("messages[%d].content: %v", i, err)
		}
		return []chatwire.ContentPart{{Type: chatwire.PartText, Text: s}}, nil
	}
	var parts []chatwire.ContentPart
	if err := strictjson.Unmarshal(raw, &parts); err != nil {
		var fe *strictjson.FieldError
		if errors.As(err, &fe) && len(fe.Path) == 0 {
			return nil, invalid("messages[%d].content must be a string or an array of content parts, not %s", i, fe.Got)
		}
		return nil, invalid("messages[%d].content: %v", i, err)
	}
	return parts, nil
}

// textPieces reads a content that may only hold text (system, developer, tool); empty texts
// are dropped so that joining them adds no stray separators.
func textPieces(raw json.RawMessage, i int) ([]string, *apierror.Error) {
	parts, err := content(raw, i)
	if err != nil {
		return nil, err
	}
	var out []string
	for j, p := range parts {
		if p.Type != chatwire.PartText {
			return nil, invalid("messages[%d].content[%d]: only text parts are allowed here, not %q", i, j, p.Type)
		}
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return out, nil
}

func userParts(raw json.RawMessage, i int) ([]*corev1.Part, *apierror.Error) {
	if !chatwire.Present(raw) {
		return nil, invalid("messages[%d].content is required for a user message", i)
	}
	if raw[0] == '"' {
		// The usual user content, one string: its part and the slice holding it are made in
		// one allocation, without the intermediate content part. Anything else (an escape
		// jsontext.String does not read, an error) takes the general way below.
		if s, next, ok := jsontext.String(raw, 0); ok && next == len(raw) {
			x := &struct {
				parts [1]*corev1.Part
				part  corev1.Part
				text  corev1.Part_Text
			}{}
			x.text.Text = s
			x.part.Kind = &x.text
			x.parts[0] = &x.part
			return x.parts[:], nil
		}
	}
	parts, err := content(raw, i)
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Part, 0, len(parts))
	for j, p := range parts {
		switch p.Type {
		case chatwire.PartText:
			out = append(out, &corev1.Part{Kind: &corev1.Part_Text{Text: p.Text}})
		case chatwire.PartImageURL:
			img, err := image(p.ImageURL, i, j)
			if err != nil {
				return nil, err
			}
			out = append(out, &corev1.Part{Kind: &corev1.Part_Image{Image: img}})
		case "":
			return nil, invalid("messages[%d].content[%d].type is required", i, j)
		default:
			// input_audio, file: no canonical form. Passthrough sends them as they are; a
			// translated request goes without them.
		}
	}
	return out, nil
}

// image reads an image_url: a data: URL becomes inline base64 with its media type, an http(s)
// URL stays a URL.
func image(u *chatwire.ImageURL, i, j int) (*corev1.Image, *apierror.Error) {
	if u == nil || u.URL == "" {
		return nil, invalid("messages[%d].content[%d].image_url.url is required", i, j)
	}
	if rest, ok := strings.CutPrefix(u.URL, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		mime, base64, _ := strings.Cut(meta, ";")
		if !ok || mime == "" || !strings.Contains(";"+base64+";", ";base64;") {
			return nil, invalid("messages[%d].content[%d].image_url.url: a data URL must be data:<media type>;base64,<data>", i, j)
		}
		return &corev1.Image{MimeType: mime, DataBase64: data}, nil
	}
	lower := strings.ToLower(u.URL)
	if strings.HasPrefix(lower, "https://") || strings.HasPrefix(lower, "http://") {
		return &corev1.Image{Url: u.URL}, nil
	}
	return nil, invalid("messages[%d].content[%d].image_url.url must be an http(s) or data URL", i, j)
}

func assistantParts(m chatwire.Message, i int, names map[string]string) ([]*corev1.Part, *apierror.Error) {
	var out []*corev1.Part
	if r := m.ReasoningContent; r != nil && *r != "" {
		out = append(out, &corev1.Part{Kind: &corev1.Part_Thinking{Thinking: &corev1.Thinking{Text: *r}}})
	}
	parts, err := content(m.Content, i)
	if err != nil {
		return nil, err
	}
	for j, p := range parts {
		switch p.Type {
		case chatwire.PartText:
			if p.Text != "" {
				out = append(out, &corev1.Part{Kind: &corev1.Part_Text{Text: p.Text}})
			}
		case chatwire.PartRefusal:
			if p.Refusal != "" {
				out = append(out, &corev1.Part{Kind: &corev1.Part_Text{Text: p.Refusal}})
			}
		default:
			return nil, invalid("messages[%d].content[%d]: an assistant message holds text or refusal parts, not %q", i, j, p.Type)
		}
	}
	for j, tc := range m.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			return nil, invalid("messages[%d].tool_calls[%d].type %q is not supported", i, j, tc.Type)
		}
		if tc.ID == "" || tc.Function.Name == "" {
			return nil, invalid("messages[%d].tool_calls[%d] needs an id and a function name", i, j)
		}
		args := tc.Function.Arguments
		if strings.TrimSpace(args) == "" {
			args = "{}" // the canonical form of "no arguments"; other protocols need an object
		}
		names[tc.ID] = tc.Function.Name
		out = append(out, &corev1.Part{Kind: &corev1.Part_ToolCall{ToolCall: &corev1.ToolCall{Id: tc.ID, Name: tc.Function.Name, Arguments: args}}})
	}
	return out, nil
}

// toolResult turns a tool message into a tool_result part; the function name, which the
// chat protocol does not repeat here, comes from the assistant turn that made the call.
func toolResult(m chatwire.Message, i int, names map[string]string) (*corev1.Part, *apierror.Error) {
	if m.ToolCallID == "" {
		return nil, invalid("messages[%d].tool_call_id is required for a tool message", i)
	}
	texts, err := textPieces(m.Content, i)
	if err != nil {
		return nil, err
	}
	name, ok := names[m.ToolCallID]
	if !ok {
		name = m.Name // not in the spec, but some clients send it
	}
	return &corev1.Part{Kind: &corev1.Part_ToolResult{ToolResult: &corev1.ToolResult{
		CallId: m.ToolCallID, Name: name, Content: joinText(texts),
	}}}, nil
}
