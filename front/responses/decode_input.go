package responses

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	rw "modelgateway/core/wire/responseswire"
	"modelgateway/core/wire/strictjson"
)

// Opaque values the gateway itself puts into a reasoning item's encrypted_content when the
// upstream is not a responses upstream, so that what other protocols need back on the next
// turn survives the client's echo of its output items. Anything else in encrypted_content is
// a thinking signature.
const (
	// redactedPrefix marks redacted thinking (messages protocol).
	redactedPrefix = "gw.redacted:"
	// toolSignaturePrefix marks the signature of the function call that follows the item
	// (content-generation thoughtSignature).
	toolSignaturePrefix = "gw.toolsig:"
)

// inputDecoder turns instructions and input items into the canonical system text and
// messages. All assistant-side items of one turn (reasoning, message, function_call) become
// one assistant message, and consecutive function_call_output items one user message of tool
// results, which is the shape the other protocols need.
type inputDecoder struct {
	system   []string
	messages []*corev1.Message
	// callNames maps call_id to function name: function_call_output carries only the id.
	callNames map[string]string
	// toolSig is a function-call signature waiting for its function_call item.
	toolSig string
}

func (d *inputDecoder) decode(w *rw.Request) *apierror.Error {
	switch rw.InputKind(w.Input) {
	case rw.InputAbsent:
		// Server-side state names the conversation instead; only a responses upstream has it.
		if w.PreviousResponseID == nil && rw.InputKind(w.Conversation) == rw.InputAbsent && rw.InputKind(w.Prompt) == rw.InputAbsent {
			return invalid("input is required")
		}
		return nil
	case rw.InputString:
		var s string
		if err := strictjson.Unmarshal(w.Input, &s); err != nil {
			return invalid("input: %v", err)
		}
		d.messages = append(d.messages, &corev1.Message{Role: corev1.Role_ROLE_USER, Parts: []*corev1.Part{textPart(s)}})
		return nil
	case rw.InputItems:
		var items []rw.InputItem
		if err := strictjson.Unmarshal(w.Input, &items); err != nil {
			return invalid("input: %v", err)
		}
		for i := range items {
			if err := d.item(&items[i]); err != nil {
				return invalid("input[%d]: %v", i, err)
			}
		}
		return nil
	}
	return invalid("input must be a string or an array of items")
}

func (d *inputDecoder) item(it *rw.InputItem) error {
	switch it.Type {
	case "", rw.ItemMessage:
		return d.message(it)
	case rw.ItemFunctionCall:
		if it.CallID == "" {
			return errors.New("call_id is required")
		}
		if it.Name == "" {
			return errors.New("name is required")
		}
		name := namespacedName(it.Namespace, it.Name)
		if d.callNames == nil {
			d.callNames = make(map[string]string)
		}
		d.callNames[it.CallID] = name
		args := it.Arguments
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		d.assistant(&corev1.Part{Kind: &corev1.Part_ToolCall{ToolCall: &corev1.ToolCall{
			Id: it.CallID, Name: name, Arguments: args, Signature: d.toolSig}}})
		d.toolSig = ""
		return nil
	case rw.ItemFunctionCallOutput:
		if it.CallID == "" {
			return errors.New("call_id is required")
		}
		content, err := toolOutput(it.Output)
		if err != nil {
			return fmt.Errorf("output: %w", err)
		}
		d.toolResult(&corev1.ToolResult{CallId: it.CallID, Name: d.callNames[it.CallID], Content: content})
		return nil
	case rw.ItemReasoning:
		d.reasoning(it)
		return nil
	}
	// item_reference, compaction and hosted-tool items only mean something to a responses
	// upstream, which gets the raw body.
	return nil
}

func (d *inputDecoder) message(it *rw.InputItem) error {
	parts, err := rw.ContentParts(it.Content)
	if err != nil {
		return fmt.Errorf("content: %w", err)
	}
	switch it.Role {
	case rw.RoleSystem, rw.RoleDeveloper:
		var texts []string
		for _, p := range parts {
			if isText(p.Type) && p.Text != "" {
				texts = append(texts, p.Text)
			}
		}
		if len(texts) > 0 {
			d.system = append(d.system, strings.Join(texts, "\n"))
		}
		return nil
	case rw.RoleUser:
		msg := &corev1.Message{Role: corev1.Role_ROLE_USER}
		for i, p := range parts {
			part, err := userPart(p)
			if err != nil {
				return fmt.Errorf("content[%d]: %w", i, err)
			}
			if part != nil {
				msg.Parts = append(msg.Parts, part)
			}
		}
		if len(msg.Parts) > 0 {
			d.messages = append(d.messages, msg)
		}
		d.toolSig = ""
		return nil
	case rw.RoleAssistant:
		for _, p := range parts {
			text := p.Text
			if p.Type == rw.PartRefusal {
				text = p.Refusal
			} else if !isText(p.Type) {
				continue
			}
			if text != "" {
				d.assistant(textPart(text))
			}
		}
		return nil
	case "":
		return errors.New("role is required")
	}
	return fmt.Errorf("role %q is not one of user, assistant, system, developer", it.Role)
}

// reasoning keeps what the next turn needs: the summary (or raw reasoning) text and the
// opaque encrypted_content as the thinking signature.
func (d *inputDecoder) reasoning(it *rw.InputItem) {
	var enc string
	if it.EncryptedContent != nil {
		enc = *it.EncryptedContent
	}
	if sig, ok := strings.CutPrefix(enc, toolSignaturePrefix); ok {
		d.toolSig = sig
		return
	}
	th := &corev1.Thinking{Signature: enc}
	if data, ok := strings.CutPrefix(enc, redactedPrefix); ok {
		th = &corev1.Thinking{RedactedData: data}
	}
	var texts []string
	for _, s := range it.Summary {
		if s.Text != "" {
			texts = append(texts, s.Text)
		}
	}
	if len(texts) == 0 {
		// Raw reasoning text, where the upstream exposed it; not a summary.
		if parts, err := rw.ContentParts(it.Content); err == nil {
			for _, p := range parts {
				if p.Type == rw.PartReasoningText && p.Text != "" {
					texts = append(texts, p.Text)
				}
			}
		}
	}
	th.Text = strings.Join(texts, "\n\n")
	if th.Text == "" && th.Signature == "" && th.RedactedData == "" {
		return
	}
	d.assistant(&corev1.Part{Kind: &corev1.Part_Thinking{Thinking: th}})
}

// assistant appends to the assistant turn in progress or starts one.
func (d *inputDecoder) assistant(p *corev1.Part) {
	if n := len(d.messages); n > 0 && d.messages[n-1].GetRole() == corev1.Role_ROLE_ASSISTANT {
		d.messages[n-1].Parts = append(d.messages[n-1].Parts, p)
		return
	}
	d.messages = append(d.messages, &corev1.Message{Role: corev1.Role_ROLE_ASSISTANT, Parts: []*corev1.Part{p}})
}

// toolResult appends to a user turn of tool results or starts one; a user message with text
// is a turn of its own.
func (d *inputDecoder) toolResult(r *corev1.ToolResult) {
	p := &corev1.Part{Kind: &corev1.Part_ToolResult{ToolResult: r}}
	if n := len(d.messages); n > 0 && onlyToolResults(d.messages[n-1]) {
		d.messages[n-1].Parts = append(d.messages[n-1].Parts, p)
		return
	}
	d.messages = append(d.messages, &corev1.Message{Role: corev1.Role_ROLE_USER, Parts: []*corev1.Part{p}})
}

func onlyToolResults(m *corev1.Message) bool {
	if m.GetRole() != corev1.Role_ROLE_USER || len(m.GetParts()) == 0 {
		return false
	}
	for _, p := range m.GetParts() {
		if p.GetToolResult() == nil {
			return false
		}
	}
	return true
}

func isText(partType string) bool {
	return partType == rw.PartInputText || partType == rw.PartOutputText
}

func textPart(s string) *corev1.Part {
	return &corev1.Part{Kind: &corev1.Part_Text{Text: s}}
}

// userPart converts one input part; nil for parts only a responses upstream understands
// (input_file, file_id images) and empty text, which some upstreams reject.
func userPart(p rw.ContentPart) (*corev1.Part, error) {
	switch p.Type {
	case rw.PartInputText, rw.PartOutputText:
		if p.Text == "" {
			return nil, nil
		}
		return textPart(p.Text), nil
	case rw.PartInputImage:
		if p.ImageURL == "" {
			if p.FileID != "" {
				return nil, nil
			}
			return nil, errors.New("input_image needs image_url or file_id")
		}
		img, err := image(p.ImageURL)
		if err != nil {
			return nil, err
		}
		return &corev1.Part{Kind: &corev1.Part_Image{Image: img}}, nil
	case "":
		return nil, errors.New("type is required")
	}
	return nil, nil
}

// image accepts an http(s) URL or a base64 data: URL.
func image(url string) (*corev1.Image, error) {
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		meta, data, found := strings.Cut(rest, ",")
		mime, isBase64 := strings.CutSuffix(meta, ";base64")
		if !found || !isBase64 || mime == "" {
			return nil, errors.New("image_url data: URLs must be data:<media type>;base64,<data>")
		}
		return &corev1.Image{MimeType: mime, DataBase64: data}, nil
	}
	if strings.HasPrefix(url, "https://") || strings.HasPrefix(url, "http://") {
		return &corev1.Image{Url: url}, nil
	}
	return nil, errors.New("image_url must be an http(s) URL or a data: URL")
}

// toolOutput is function_call_output.output as text: a string, or the text parts of an array
// joined by newlines (images and files in tool output have no canonical form).
func toolOutput(raw json.RawMessage) (string, error) {
	switch rw.InputKind(raw) {
	case rw.InputAbsent:
		return "", nil
	case rw.InputString:
		var s string
		err := strictjson.Unmarshal(raw, &s)
		return s, err
	case rw.InputItems:
		var parts []rw.ContentPart
		if err := strictjson.Unmarshal(raw, &parts); err != nil {
			return "", err
		}
		var texts []string
		for _, p := range parts {
			if isText(p.Type) {
				texts = append(texts, p.Text)
			}
		}
		return strings.Join(texts, "\n"), nil
	}
	return string(raw), nil
}
