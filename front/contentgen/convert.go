package contentgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/geminiwire"
	"modelgateway/core/wire/strictjson"
)

// emptySchema is the argument schema of a function declared without parameters.
const emptySchema = `{"type":"object","properties":{}}`

// converter holds what one request's conversion needs across turns: the Gemini API rarely
// gives call ids, so calls without one get "call_<n>" (deterministic, so that a client
// resending the same history produces the same ids), and responses without one are matched
// to the oldest unanswered call of the same name.
type converter struct {
	synthesized int
	unanswered  []pendingCall
}

type pendingCall struct{ id, name string }

// toCanonical converts the request body; model, family and stream are the caller's.
func toCanonical(g *geminiwire.GenerateContentRequest) (*corev1.GenerateRequest, *apierror.Error) {
	req := &corev1.GenerateRequest{}
	if si := g.SystemInstruction; si != nil {
		var texts []string
		for _, p := range si.Parts {
			if p.Text != nil && *p.Text != "" {
				texts = append(texts, *p.Text)
			}
		}
		req.System = strings.Join(texts, "\n\n")
	}
	var cv converter
	for i, c := range g.Contents {
		m, err := cv.message(c)
		if err != nil {
			return nil, apierror.New(apierror.InvalidRequest, "contents[%d]: %v", i, err)
		}
		if len(m.GetParts()) > 0 {
			req.Messages = append(req.Messages, m)
		}
	}
	for i, t := range g.Tools {
		for j, fd := range t.FunctionDeclarations {
			tool, err := toolOf(fd)
			if err != nil {
				return nil, apierror.New(apierror.InvalidRequest, "tools[%d].functionDeclarations[%d]: %v", i, j, err)
			}
			req.Tools = append(req.Tools, tool)
		}
	}
	if tc := g.ToolConfig; tc != nil && tc.FunctionCallingConfig != nil {
		choice, err := toolChoice(tc.FunctionCallingConfig)
		if err != nil {
			return nil, apierror.New(apierror.InvalidRequest, "toolConfig.functionCallingConfig: %v", err)
		}
		req.ToolChoice = choice
	}
	if c := g.GenerationConfig; c != nil {
		if err := applyConfig(req, c); err != nil {
			return nil, apierror.New(apierror.InvalidRequest, "generationConfig: %v", err)
		}
	}
	return req, nil
}

func (cv *converter) message(c geminiwire.Content) (*corev1.Message, error) {
	m := &corev1.Message{}
	switch c.Role {
	case "", geminiwire.RoleUser, "function", "tool": // older clients sent results as "function"
		m.Role = corev1.Role_ROLE_USER
	case geminiwire.RoleModel:
		m.Role = corev1.Role_ROLE_ASSISTANT
	default:
		return nil, fmt.Errorf("role %q is not valid; use user or model", c.Role)
	}
	model := m.Role == corev1.Role_ROLE_ASSISTANT
	for j, p := range c.Parts {
		parts, err := cv.parts(p, model)
		if err != nil {
			return nil, fmt.Errorf("parts[%d]: %w", j, err)
		}
		m.Parts = append(m.Parts, parts...)
	}
	return m, nil
}

// parts converts one part; a text part carrying a thought signature becomes the signature
// (as thinking) followed by the text, so that the signature survives a round trip.
func (cv *converter) parts(p geminiwire.Part, model bool) ([]*corev1.Part, error) {
	switch {
	case p.FunctionCall != nil:
		return []*corev1.Part{cv.toolCall(p.FunctionCall, p.ThoughtSignature)}, nil
	case p.FunctionResponse != nil:
		return []*corev1.Part{cv.toolResult(p.FunctionResponse)}, nil
	case p.InlineData != nil:
		if p.InlineData.Data == "" {
			return nil, fmt.Errorf("inlineData.data is empty")
		}
		return []*corev1.Part{{Kind: &corev1.Part_Image{Image: &corev1.Image{MimeType: p.InlineData.MimeType, DataBase64: p.InlineData.Data}}}}, nil
	case p.FileData != nil:
		if p.FileData.FileURI == "" {
			return nil, fmt.Errorf("fileData.fileUri is empty")
		}
		return []*corev1.Part{{Kind: &corev1.Part_Image{Image: &corev1.Image{MimeType: p.FileData.MimeType, Url: p.FileData.FileURI}}}}, nil
	case p.Thought:
		if p.Text == nil && p.ThoughtSignature == "" {
			return nil, nil
		}
		return []*corev1.Part{thinking(val(p.Text), p.ThoughtSignature)}, nil
	}
	var out []*corev1.Part
	if model && p.ThoughtSignature != "" {
		out = append(out, thinking("", p.ThoughtSignature))
	}
	if p.Text != nil && *p.Text != "" {
		out = append(out, &corev1.Part{Kind: &corev1.Part_Text{Text: *p.Text}})
	}
	// executableCode, codeExecutionResult and videoMetadata have no canonical form; an
	// upstream of this protocol still sees them in the raw body.
	return out, nil
}

func thinking(text, signature string) *corev1.Part {
	return &corev1.Part{Kind: &corev1.Part_Thinking{Thinking: &corev1.Thinking{Text: text, Signature: signature}}}
}

func (cv *converter) toolCall(fc *geminiwire.FunctionCall, signature string) *corev1.Part {
	id := fc.ID
	if id == "" {
		id = fmt.Sprintf("call_%d", cv.synthesized)
		cv.synthesized++
	}
	cv.unanswered = append(cv.unanswered, pendingCall{id: id, name: fc.Name})
	return &corev1.Part{Kind: &corev1.Part_ToolCall{ToolCall: &corev1.ToolCall{
		Id: id, Name: fc.Name, Arguments: objectText(fc.Args), Signature: signature,
	}}}
}

func (cv *converter) toolResult(fr *geminiwire.FunctionResponse) *corev1.Part {
	id := fr.ID
	if id != "" {
		cv.answer(func(c pendingCall) bool { return c.id == id })
	} else if c, ok := cv.answer(func(c pendingCall) bool { return c.name == fr.Name }); ok {
		id = c.id
	} else if c, ok := cv.answer(func(pendingCall) bool { return true }); ok {
		id = c.id
	} else {
		id = fmt.Sprintf("call_%d", cv.synthesized)
		cv.synthesized++
	}
	content := objectText(fr.Response)
	return &corev1.Part{Kind: &corev1.Part_ToolResult{ToolResult: &corev1.ToolResult{
		CallId: id, Name: fr.Name, Content: content, IsError: isErrorResponse(fr.Response),
	}}}
}

// answer removes and returns the oldest unanswered call that matches.
func (cv *converter) answer(match func(pendingCall) bool) (pendingCall, bool) {
	for i, c := range cv.unanswered {
		if match(c) {
			cv.unanswered = append(cv.unanswered[:i], cv.unanswered[i+1:]...)
			return c, true
		}
	}
	return pendingCall{}, false
}

// isErrorResponse recognises the {"error": ...} convention for a failed function.
func isErrorResponse(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	if strictjson.Unmarshal(raw, &m) != nil {
		return false
	}
	_, hasErr := m["error"]
	return hasErr && len(m) == 1
}

// objectText is a JSON object compacted; anything that is not an object (absent, null) is
// "{}", the canonical empty argument list.
func objectText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return "{}"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "{}"
	}
	return b.String()
}

func val[T any](p *T) T {
	if p == nil {
		var z T
		return z
	}
	return *p
}
