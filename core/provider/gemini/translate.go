package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/provider"
	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/geminiwire"
)

// maxStop is the upstream's limit on stopSequences.
const maxStop = 5

// skipSignature is Google's documented stand-in for a thought signature on function calls
// that never had one (history from another model); without it Gemini 3 rejects the turn
// with "Function call is missing a thought_signature".
const skipSignature = "skip_thought_signature_validator"

// translated sends the canonical request as a GenerateContentRequest.
func translated(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	g, err := toRequest(call.Request)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(g)
	if err != nil {
		return nil, &provider.Error{Message: "encoding the upstream request failed", Err: err}
	}
	stream := call.Request.GetStream()
	resp, err := send(ctx, call, action(stream), body)
	if err != nil {
		return nil, err
	}
	if stream {
		st, dec := start(call, "", false, resp), newDecoder()
		dec.start = st
		return provider.NewSSEStream(resp.Body, st, dec), nil
	}
	raw, err := provider.ReadAll(resp.Body, provider.MaxAnswer)
	if err != nil {
		return nil, err
	}
	return decodeWhole(call, raw, newDecoder()) // decode.go
}

// toRequest converts the canonical request. Failures are invalid_request_error: the request
// asks for something this upstream cannot take.
func toRequest(req *corev1.GenerateRequest) (*geminiwire.GenerateContentRequest, error) {
	g := &geminiwire.GenerateContentRequest{}
	if req.GetSystem() != "" {
		g.SystemInstruction = &geminiwire.Content{Parts: []geminiwire.Part{geminiwire.TextPart(req.GetSystem())}}
	}
	contents, err := contentsOf(req.GetMessages())
	if err != nil {
		return nil, err
	}
	g.Contents = contents
	if len(req.GetTools()) > 0 {
		decls := make([]geminiwire.FunctionDeclaration, 0, len(req.GetTools()))
		for _, t := range req.GetTools() {
			d := geminiwire.FunctionDeclaration{Name: t.GetName(), Description: t.GetDescription()}
			if p := strings.TrimSpace(t.GetParameters()); p != "" {
				// The full JSON Schema goes in parametersJsonSchema: "parameters" takes only
				// an OpenAPI subset and rejects additionalProperties, $ref, const, ...
				d.ParametersJSONSchema = json.RawMessage(p)
			}
			decls = append(decls, d)
		}
		g.Tools = []geminiwire.Tool{{FunctionDeclarations: decls}}
		g.ToolConfig = toolConfig(req.GetToolChoice())
	}
	gc, err := generationConfig(req)
	if err != nil {
		return nil, err
	}
	g.GenerationConfig = gc
	return g, nil
}

// contentsOf converts the turns, merging consecutive turns of one role (the upstream wants
// them alternating) and giving every function response the name of its call.
func contentsOf(msgs []*corev1.Message) ([]geminiwire.Content, error) {
	names := map[string]string{} // tool call id → function name
	var out []geminiwire.Content
	for i, m := range msgs {
		role := geminiwire.RoleUser
		if m.GetRole() == corev1.Role_ROLE_ASSISTANT {
			role = geminiwire.RoleModel
		}
		var parts []geminiwire.Part
		for j, p := range m.GetParts() {
			part, ok, err := partOf(p, names)
			if err != nil {
				return nil, apierror.New(apierror.InvalidRequest, "messages[%d].content[%d]: %v", i, j, err)
			}
			if ok {
				parts = append(parts, part)
			}
		}
		if len(parts) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Parts = append(out[n-1].Parts, parts...)
			continue
		}
		out = append(out, geminiwire.Content{Role: role, Parts: parts})
	}
	for i := range out {
		if out[i].Role == geminiwire.RoleModel {
			signFirstCall(out[i].Parts)
		}
	}
	return out, nil
}

// signFirstCall gives the first function call of a model turn the stand-in signature when
// it has none: the upstream checks the first call of each step.
func signFirstCall(parts []geminiwire.Part) {
	for i := range parts {
		if parts[i].FunctionCall != nil {
			if parts[i].ThoughtSignature == "" {
				parts[i].ThoughtSignature = skipSignature
			}
			return
		}
	}
}

func partOf(p *corev1.Part, names map[string]string) (geminiwire.Part, bool, error) {
	switch k := p.GetKind().(type) {
	case *corev1.Part_Text:
		if k.Text == "" {
			return geminiwire.Part{}, false, nil
		}
		return geminiwire.TextPart(k.Text), true, nil
	case *corev1.Part_Image:
		part, err := imagePart(k.Image)
		return part, err == nil, err
	case *corev1.Part_ToolCall:
		c := k.ToolCall
		names[c.GetId()] = c.GetName()
		args, err := argsObject(c.GetArguments())
		if err != nil {
			return geminiwire.Part{}, false, fmt.Errorf("tool call %q: %w", c.GetName(), err)
		}
		// Ids are left out: the upstream matches calls by order and name, and usually
		// gave none (the id the client holds is one this gateway made up).
		return geminiwire.Part{FunctionCall: &geminiwire.FunctionCall{Name: c.GetName(), Args: args}, ThoughtSignature: c.GetSignature()}, true, nil
	case *corev1.Part_ToolResult:
		r := k.ToolResult
		name := r.GetName()
		if name == "" {
			name = names[r.GetCallId()]
		}
		if name == "" {
			return geminiwire.Part{}, false, fmt.Errorf("the tool result for call %q names no function, and no earlier call has that id", r.GetCallId())
		}
		return geminiwire.Part{FunctionResponse: &geminiwire.FunctionResponse{Name: name, Response: responseObject(r.GetContent(), r.GetIsError())}}, true, nil
	case *corev1.Part_Thinking:
		t := k.Thinking
		if t.GetSignature() == "" {
			return geminiwire.Part{}, false, nil // thought text alone is not sent back
		}
		text := t.GetText()
		return geminiwire.Part{Text: &text, Thought: true, ThoughtSignature: t.GetSignature()}, true, nil
	}
	return geminiwire.Part{}, false, nil
}

// argsObject parses tool arguments text into the object functionCall.args must be.
func argsObject(s string) (json.RawMessage, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage(`{}`), nil
	}
	if s[0] != '{' || !json.Valid([]byte(s)) {
		return nil, fmt.Errorf("arguments are not a JSON object")
	}
	return json.RawMessage(s), nil
}

// responseObject is a tool result as the object functionResponse.response must be: a JSON
// object as it is, anything else wrapped ({"result": ...}, or {"error": ...} for a failure).
func responseObject(content string, isError bool) json.RawMessage {
	t := strings.TrimSpace(content)
	if !isError && strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	key := "result"
	if isError {
		key = "error"
	}
	var v any = content
	if json.Valid([]byte(t)) && t != "" && (t[0] == '{' || t[0] == '[') {
		v = json.RawMessage(t)
	}
	b, _ := json.Marshal(map[string]any{key: v})
	return b
}

// imagePart inlines base64 images. The upstream fetches no arbitrary URL: fileData takes
// only its own Files API and gs:// URIs, and the gateway does not download on its behalf.
func imagePart(img *corev1.Image) (geminiwire.Part, error) {
	if img.GetDataBase64() != "" {
		return geminiwire.Part{InlineData: &geminiwire.Blob{MimeType: mimeOf(img.GetMimeType(), img.GetDataBase64()), Data: img.GetDataBase64()}}, nil
	}
	u := img.GetUrl()
	switch {
	case strings.HasPrefix(u, "data:"):
		meta, data, ok := strings.Cut(strings.TrimPrefix(u, "data:"), ",")
		mime, isBase64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isBase64 {
			return geminiwire.Part{}, fmt.Errorf("only base64 data: URLs can be sent")
		}
		return geminiwire.Part{InlineData: &geminiwire.Blob{MimeType: mimeOf(mime, data), Data: data}}, nil
	case strings.HasPrefix(u, "gs://"), strings.HasPrefix(u, "https://generativelanguage.googleapis.com/"):
		return geminiwire.Part{FileData: &geminiwire.FileData{MimeType: img.GetMimeType(), FileURI: u}}, nil
	case u == "":
		return geminiwire.Part{}, fmt.Errorf("the image has neither data nor a URL")
	}
	return geminiwire.Part{}, fmt.Errorf("image URLs cannot be sent to a content-generation upstream (it accepts only its own uploaded files); send the image inline as base64 or a data: URL")
}

// mimeOf is the given media type, or one recognised from the data's first bytes: the
// upstream requires one.
func mimeOf(mime, b64 string) string {
	if mime != "" {
		return mime
	}
	for prefix, m := range map[string]string{"iVBORw0KGgo": "image/png", "/9j/": "image/jpeg", "R0lGOD": "image/gif", "UklGR": "image/webp"} {
		if strings.HasPrefix(b64, prefix) {
			return m
		}
	}
	return "image/jpeg"
}

func toolConfig(tc *corev1.ToolChoice) *geminiwire.ToolConfig {
	fc := &geminiwire.FunctionCallingConfig{}
	switch tc.GetMode() {
	case corev1.ToolChoice_MODE_AUTO:
		fc.Mode = geminiwire.ModeAuto
	case corev1.ToolChoice_MODE_NONE:
		fc.Mode = geminiwire.ModeNone
	case corev1.ToolChoice_MODE_REQUIRED:
		fc.Mode = geminiwire.ModeAny
	case corev1.ToolChoice_MODE_NAMED:
		fc.Mode, fc.AllowedFunctionNames = geminiwire.ModeAny, []string{tc.GetName()}
	default:
		return nil
	}
	return &geminiwire.ToolConfig{FunctionCallingConfig: fc}
}

// Thinking budgets for reasoning efforts, as Google's own OpenAI-compatible endpoint maps
// reasoning_effort.
var effortBudgets = map[string]int64{"none": 0, "minimal": 512, "low": 1024, "medium": 8192, "high": 24576, "xhigh": 24576, "max": 24576}

func generationConfig(req *corev1.GenerateRequest) (*geminiwire.GenerationConfig, error) {
	if len(req.GetStop()) > maxStop {
		return nil, apierror.New(apierror.InvalidRequest, "a content-generation upstream takes at most %d stop sequences; %d were given", maxStop, len(req.GetStop()))
	}
	c := &geminiwire.GenerationConfig{
		MaxOutputTokens:  req.MaxOutputTokens,
		Temperature:      req.Temperature,
		TopP:             req.TopP,
		StopSequences:    req.GetStop(),
		CandidateCount:   req.N,
		Seed:             req.Seed,
		PresencePenalty:  req.PresencePenalty,
		FrequencyPenalty: req.FrequencyPenalty,
		Logprobs:         req.TopLogprobs,
	}
	if req.TopK != nil {
		k := float64(req.GetTopK())
		c.TopK = &k
	}
	if req.GetLogprobs() {
		t := true
		c.ResponseLogprobs = &t
	}
	switch rf := req.GetResponseFormat(); rf.GetType() {
	case corev1.ResponseFormat_TYPE_JSON_OBJECT:
		c.ResponseMimeType = "application/json"
	case corev1.ResponseFormat_TYPE_JSON_SCHEMA:
		c.ResponseMimeType = "application/json"
		if s := strings.TrimSpace(rf.GetSchema()); s != "" {
			c.ResponseJSONSchema = json.RawMessage(s)
		}
	}
	c.ThinkingConfig = thinkingConfig(req.GetReasoning())
	if isZero(c) {
		return nil, nil
	}
	return c, nil
}

func thinkingConfig(r *corev1.Reasoning) *geminiwire.ThinkingConfig {
	if r == nil {
		return nil
	}
	tc := &geminiwire.ThinkingConfig{}
	set := func(n int64) { tc.ThinkingBudget = &n }
	switch b, ok := effortBudgets[strings.ToLower(r.GetEffort())]; {
	case r.GetDisabled():
		set(0)
	case r.GetBudgetTokens() > 0:
		set(r.GetBudgetTokens())
	case ok:
		set(b)
	}
	if r.GetIncludeThoughts() && (tc.ThinkingBudget == nil || *tc.ThinkingBudget != 0) {
		t := true
		tc.IncludeThoughts = &t
	}
	if tc.ThinkingBudget == nil && tc.IncludeThoughts == nil {
		return nil
	}
	return tc
}

func isZero(c *geminiwire.GenerationConfig) bool {
	b, _ := json.Marshal(c)
	return bytes.Equal(b, []byte(`{}`))
}
