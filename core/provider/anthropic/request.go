package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/provider"
	"modelgateway/core/wire/apierror"
	mw "modelgateway/core/wire/messageswire"
)

// Thinking limits of the API: the budget is at least minBudget and below max_tokens.
const (
	minBudget        = 1024
	fallbackMaxToken = 4096
)

// effortBudgets gives a thinking budget to a client that names an effort (chat's
// reasoning_effort, responses' reasoning.effort) but no budget. Every thinking-capable model
// takes budget_tokens; output_config.effort only the newest ones.
var effortBudgets = map[string]int64{
	"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 24576, "max": 32000,
}

// buildRequest maps the canonical request to a messages request (translation.md 1).
func buildRequest(call *provider.Call) (*mw.Request, error) {
	req := call.Request
	if req.GetN() > 1 {
		return nil, apierror.New(apierror.InvalidRequest, "n > 1 is not supported by the model's upstream (messages protocol)")
	}
	// The request and the values its pointers name, in one allocation rather than three.
	x := &struct {
		w         mw.Request
		maxTokens int64
		stream    bool
	}{}
	maxTokens := req.GetMaxOutputTokens()
	if maxTokens <= 0 {
		maxTokens = call.DefaultMaxTokens
	}
	if maxTokens <= 0 {
		maxTokens = fallbackMaxToken
	}
	x.maxTokens = maxTokens
	w := &x.w
	*w = mw.Request{
		Model:     call.UpstreamModel,
		MaxTokens: &x.maxTokens,
		Messages:  messages(req.GetMessages()),
	}
	if s := req.GetSystem(); s != "" {
		w.System = mw.Content{{Type: mw.BlockText, Text: s}}
	}
	if req.GetStream() {
		x.stream = true
		w.Stream = &x.stream
	}
	w.Tools, w.ToolChoice = tools(req)
	for _, s := range req.GetStop() {
		if s != "" {
			w.StopSequences = append(w.StopSequences, s)
		}
	}
	if u := req.GetUser(); u != "" {
		w.Metadata = &mw.Metadata{UserID: u}
	}
	w.OutputConfig = outputFormat(req.GetResponseFormat())
	w.Thinking = thinking(req, maxTokens, w.ToolChoice)
	// The API refuses changed sampling while thinking; without thinking its temperature
	// range is 0..1, not OpenAI's 0..2.
	if w.Thinking == nil {
		if t := req.Temperature; t != nil {
			v := min(max(*t, 0), 1)
			w.Temperature = &v
		}
		w.TopP = req.TopP
		if k := req.TopK; k != nil {
			v := int64(*k)
			w.TopK = &v
		}
	}
	return w, nil
}

// countBody is the count_tokens body for a client of another protocol.
func countBody(call *provider.Call) ([]byte, error) {
	req := call.Request
	c := mw.CountTokensRequest{Model: call.UpstreamModel, Messages: messages(req.GetMessages())}
	if s := req.GetSystem(); s != "" {
		c.System = mw.Content{{Type: mw.BlockText, Text: s}}
	}
	c.Tools, c.ToolChoice = tools(req)
	body, err := json.Marshal(c)
	if err != nil {
		return nil, &provider.Error{Message: "the upstream request could not be encoded", Err: err}
	}
	return body, nil
}

// messages maps the turns. The API wants every tool_result for an assistant turn in the one
// user turn right after it, before any other block of that turn; canonical tool results are
// already parts of user turns, so merging consecutive same-role turns and putting results
// first is enough (translation.md 1: "Tool results").
func messages(in []*corev1.Message) []mw.MessageParam {
	out := make([]mw.MessageParam, 0, len(in))
	for _, m := range in {
		role := mw.RoleUser
		if m.GetRole() == corev1.Role_ROLE_ASSISTANT {
			role = mw.RoleAssistant
		}
		blocks := contentBlocks(m.GetParts())
		if len(blocks) == 0 {
			continue // the API rejects empty turns and empty text blocks
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			continue
		}
		out = append(out, mw.MessageParam{Role: role, Content: blocks})
	}
	for i := range out {
		if out[i].Role == mw.RoleUser {
			out[i].Content = resultsFirst(out[i].Content)
		}
	}
	return out
}

func resultsFirst(c mw.Content) mw.Content {
	firstOther := -1
	for i := range c {
		if c[i].Type != mw.BlockToolResult {
			firstOther = i
			break
		}
	}
	if firstOther < 0 {
		return c
	}
	moved := false
	for i := firstOther; i < len(c); i++ {
		if c[i].Type == mw.BlockToolResult {
			moved = true
			break
		}
	}
	if !moved {
		return c
	}
	out := make(mw.Content, 0, len(c))
	for i := range c {
		if c[i].Type == mw.BlockToolResult {
			out = append(out, c[i])
		}
	}
	for i := range c {
		if c[i].Type != mw.BlockToolResult {
			out = append(out, c[i])
		}
	}
	return out
}

func contentBlocks(parts []*corev1.Part) mw.Content {
	out := make(mw.Content, 0, len(parts))
	for _, p := range parts {
		switch k := p.GetKind().(type) {
		case *corev1.Part_Text:
			if k.Text != "" {
				out = append(out, mw.ContentBlock{Type: mw.BlockText, Text: k.Text})
			}
		case *corev1.Part_Image:
			out = append(out, mw.ContentBlock{Type: mw.BlockImage, Source: imageSource(k.Image)})
		case *corev1.Part_ToolCall:
			tc := k.ToolCall
			out = append(out, mw.ContentBlock{Type: mw.BlockToolUse, ID: tc.GetId(), Name: tc.GetName(), Input: toolInput(tc.GetArguments())})
		case *corev1.Part_ToolResult:
			tr := k.ToolResult
			b := mw.ContentBlock{Type: mw.BlockToolResult, ToolUseID: tr.GetCallId(), IsError: tr.GetIsError()}
			if c := tr.GetContent(); c != "" {
				b.ResultContent = mw.Content{{Type: mw.BlockText, Text: c}}
			}
			out = append(out, b)
		case *corev1.Part_Thinking:
			th := k.Thinking
			switch {
			case th.GetRedactedData() != "":
				out = append(out, mw.ContentBlock{Type: mw.BlockRedactedThinking, Data: th.GetRedactedData()})
			case th.GetSignature() != "":
				out = append(out, mw.ContentBlock{Type: mw.BlockThinking, Thinking: th.GetText(), Signature: th.GetSignature()})
			}
			// Thinking without a signature (from another provider) would be rejected: dropped.
		}
	}
	return out
}

// imageSource turns a data: URL into a base64 source; other URLs stay URLs.
func imageSource(img *corev1.Image) *mw.Source {
	if d := img.GetDataBase64(); d != "" {
		return &mw.Source{Type: mw.SourceBase64, MediaType: img.GetMimeType(), Data: d}
	}
	u := img.GetUrl()
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		if meta, data, ok := strings.Cut(rest, ","); ok {
			if mt, ok := strings.CutSuffix(meta, ";base64"); ok {
				return &mw.Source{Type: mw.SourceBase64, MediaType: mt, Data: data}
			}
		}
	}
	return &mw.Source{Type: mw.SourceURL, URL: u}
}

// toolInput is tool-call arguments as the object the API requires: "" means {}, and text that
// is not a JSON object is wrapped rather than sent as a string.
func toolInput(args string) json.RawMessage {
	t := strings.TrimSpace(args)
	if t == "" {
		return json.RawMessage(`{}`)
	}
	if t[0] == '{' && json.Valid([]byte(t)) {
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(t)) == nil {
			return buf.Bytes()
		}
	}
	wrapped, _ := json.Marshal(map[string]string{"_raw": args})
	return wrapped
}

// tools maps declarations and the choice. parallel_tool_calls:false is
// disable_parallel_tool_use, which needs a choice object; "none" cannot carry it.
func tools(req *corev1.GenerateRequest) ([]mw.Tool, *mw.ToolChoice) {
	if len(req.GetTools()) == 0 {
		return nil, nil
	}
	out := make([]mw.Tool, 0, len(req.GetTools()))
	for _, t := range req.GetTools() {
		schema := json.RawMessage(t.GetParameters())
		if len(bytes.TrimSpace(schema)) == 0 || !json.Valid(schema) {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		out = append(out, mw.Tool{Name: t.GetName(), Description: t.GetDescription(), InputSchema: schema, Strict: t.Strict})
	}
	var tc *mw.ToolChoice
	switch c := req.GetToolChoice(); c.GetMode() {
	case corev1.ToolChoice_MODE_AUTO:
		tc = &mw.ToolChoice{Type: mw.ToolChoiceAuto}
	case corev1.ToolChoice_MODE_NONE:
		tc = &mw.ToolChoice{Type: mw.ToolChoiceNone}
	case corev1.ToolChoice_MODE_REQUIRED:
		tc = &mw.ToolChoice{Type: mw.ToolChoiceAny}
	case corev1.ToolChoice_MODE_NAMED:
		tc = &mw.ToolChoice{Type: mw.ToolChoiceTool, Name: c.GetName()}
	}
	if p := req.ParallelToolCalls; p != nil && !*p {
		if tc == nil {
			tc = &mw.ToolChoice{Type: mw.ToolChoiceAuto}
		}
		if tc.Type != mw.ToolChoiceNone {
			disable := true
			tc.DisableParallelToolUse = &disable
		}
	}
	return out, tc
}

// outputFormat maps JSON output to output_config.format; json_object has no schema, so any
// object is allowed.
func outputFormat(rf *corev1.ResponseFormat) *mw.OutputConfig {
	switch rf.GetType() {
	case corev1.ResponseFormat_TYPE_JSON_OBJECT:
		return &mw.OutputConfig{Format: &mw.OutputFormat{Type: "json_schema", Schema: json.RawMessage(`{"type":"object"}`)}}
	case corev1.ResponseFormat_TYPE_JSON_SCHEMA:
		schema := json.RawMessage(rf.GetSchema())
		if len(bytes.TrimSpace(schema)) == 0 || !json.Valid(schema) {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		return &mw.OutputConfig{Format: &mw.OutputFormat{Type: "json_schema", Schema: schema}}
	}
	return nil
}

// thinking enables extended thinking for an explicit budget or a named effort. The API wants
// minBudget <= budget < max_tokens and refuses thinking with a forced tool; in those cases
// the request goes without thinking rather than failing.
func thinking(req *corev1.GenerateRequest, maxTokens int64, tc *mw.ToolChoice) *mw.Thinking {
	r := req.GetReasoning()
	if r == nil || r.GetDisabled() {
		return nil
	}
	budget := r.GetBudgetTokens()
	if budget <= 0 {
		budget = effortBudgets[r.GetEffort()]
	}
	if budget <= 0 {
		return nil
	}
	budget = min(max(budget, minBudget), maxTokens-1)
	if budget < minBudget {
		return nil
	}
	if tc != nil && (tc.Type == mw.ToolChoiceAny || tc.Type == mw.ToolChoiceTool) {
		return nil
	}
	return &mw.Thinking{Type: mw.ThinkingEnabled, BudgetTokens: budget}
}
