package simulator

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
)

// POST /v1/responses, /v1/responses/compact and /v1/responses/input_tokens.

type responsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       json.RawMessage `json:"instructions"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Stream             bool            `json:"stream"`
	Tools              json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Include            []string        `json:"include"`
	Temperature        json.RawMessage `json:"temperature"`
	TopP               json.RawMessage `json:"top_p"`
	Metadata           json.RawMessage `json:"metadata"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Reasoning          json.RawMessage `json:"reasoning"`
	Store              *bool           `json:"store"`
	Text               json.RawMessage `json:"text"`
	Truncation         json.RawMessage `json:"truncation"`
}

type responsesInputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// items returns the input as items; a plain string is one user message.
func (q *responsesRequest) items() []responsesInputItem {
	var s string
	if json.Unmarshal(q.Input, &s) == nil {
		return []responsesInputItem{{Type: "message", Role: "user", Content: mustJSON(s)}}
	}
	var items []responsesInputItem
	_ = json.Unmarshal(q.Input, &items)
	return items
}

func (q *responsesRequest) convo() *convo {
	c := &convo{}
	if q.MaxOutputTokens != nil {
		c.limit = *q.MaxOutputTokens
	}
	var instructions string
	if json.Unmarshal(q.Instructions, &instructions) == nil {
		c.system(instructions)
	}
	for _, it := range q.items() {
		switch it.Type {
		case "", "message":
			text := textOf(it.Content)
			switch it.Role {
			case "system", "developer":
				c.system(text)
			case "assistant":
				c.assistant(text)
			default:
				c.user(text)
			}
		case "function_call":
			c.assistant(it.Name + it.Arguments)
		case "function_call_output":
			c.toolResult(textOf(it.Output))
		}
	}
	var tools []struct {
		Type       string          `json:"type"`
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	}
	_ = json.Unmarshal(q.Tools, &tools)
	for _, t := range tools {
		if t.Type == "function" {
			c.tool(t.Name, t.Parameters)
		}
	}
	c.choice, c.forced = openAIChoice(q.ToolChoice)
	var text struct {
		Format json.RawMessage `json:"format"`
	}
	if json.Unmarshal(q.Text, &text) == nil {
		c.format(text.Format)
	}
	return c
}

type respUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

func newRespUsage(a *answer) *respUsage {
	u := &respUsage{InputTokens: a.input, OutputTokens: a.output(), TotalTokens: a.input + a.output()}
	u.InputTokensDetails.CachedTokens = a.cached
	u.OutputTokensDetails.ReasoningTokens = a.reasoningTokens()
	return u
}

type responseObj struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	CreatedAt          int64           `json:"created_at"`
	Status             string          `json:"status"`
	Error              json.RawMessage `json:"error"`
	IncompleteDetails  json.RawMessage `json:"incomplete_details"`
	Instructions       json.RawMessage `json:"instructions"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Model              string          `json:"model"`
	Output             []any           `json:"output"`
	ParallelToolCalls  bool            `json:"parallel_tool_calls"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Reasoning          json.RawMessage `json:"reasoning"`
	Store              bool            `json:"store"`
	Temperature        json.RawMessage `json:"temperature"`
	Text               json.RawMessage `json:"text"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Tools              json.RawMessage `json:"tools"`
	TopP               json.RawMessage `json:"top_p"`
	Truncation         json.RawMessage `json:"truncation"`
	Usage              *respUsage      `json:"usage"`
	Metadata           json.RawMessage `json:"metadata"`
}

type messageItem struct {
	Type    string     `json:"type"`
	ID      string     `json:"id"`
	Status  string     `json:"status"`
	Role    string     `json:"role"`
	Content []textPart `json:"content"`
}

type textPart struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

type functionCallItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Status    string `json:"status"`
}

type reasoningItem struct {
	Type             string        `json:"type"`
	ID               string        `json:"id"`
	Summary          []summaryPart `json:"summary"`
	EncryptedContent string        `json:"encrypted_content,omitempty"`
}

type summaryPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// respEvent is every streaming event but the error event; absent fields are omitted.
type respEvent struct {
	Type           string       `json:"type"`
	SequenceNumber int          `json:"sequence_number"`
	Response       *responseObj `json:"response,omitempty"`
	ItemID         string       `json:"item_id,omitempty"`
	OutputIndex    *int         `json:"output_index,omitempty"`
	ContentIndex   *int         `json:"content_index,omitempty"`
	SummaryIndex   *int         `json:"summary_index,omitempty"`
	Item           any          `json:"item,omitempty"`
	Part           any          `json:"part,omitempty"`
	Delta          *string      `json:"delta,omitempty"`
	Text           *string      `json:"text,omitempty"`
	Name           string       `json:"name,omitempty"`
	Arguments      *string      `json:"arguments,omitempty"`
	Logprobs       *[]any       `json:"logprobs,omitempty"`
}

type respErrorEvent struct {
	Type           string  `json:"type"`
	Code           *string `json:"code"`
	Message        string  `json:"message"`
	Param          *string `json:"param"`
	SequenceNumber int     `json:"sequence_number"`
}

// respReply holds the ids and the request echo of one reply.
type respReply struct {
	q       *responsesRequest
	a       *answer
	created int64
	encrypt bool // include asked for reasoning.encrypted_content
}

func (r *respReply) base(status string) *responseObj {
	q := r.q
	o := &responseObj{ID: "resp_sim" + r.a.id, Object: "response", CreatedAt: r.created, Status: status,
		Instructions: q.Instructions, MaxOutputTokens: q.MaxOutputTokens, Model: q.Model, Output: []any{},
		ParallelToolCalls: q.ParallelToolCalls == nil || *q.ParallelToolCalls, PreviousResponseID: q.PreviousResponseID,
		Reasoning:   orJSON(q.Reasoning, `{"effort":null,"summary":null}`),
		Store:       q.Store == nil || *q.Store,
		Temperature: orJSON(q.Temperature, "1.0"), TopP: orJSON(q.TopP, "1.0"),
		Text:       orJSON(q.Text, `{"format":{"type":"text"}}`),
		ToolChoice: orJSON(q.ToolChoice, `"auto"`), Tools: orJSON(q.Tools, "[]"),
		Truncation: orJSON(q.Truncation, `"disabled"`), Metadata: orJSON(q.Metadata, "{}"),
	}
	return o
}

// final is the finished response: all items, usage, and the status the limit implies.
func (r *respReply) final() *responseObj {
	o := r.base("completed")
	if r.a.truncated {
		o.Status = "incomplete"
		o.IncompleteDetails = json.RawMessage(`{"reason":"max_output_tokens"}`)
	}
	if it := r.reasoning(); it != nil {
		o.Output = append(o.Output, it)
	}
	if it := r.message(); it != nil {
		o.Output = append(o.Output, it)
	}
	if it := r.call(); it != nil {
		o.Output = append(o.Output, it)
	}
	o.Usage = newRespUsage(r.a)
	return o
}

func (r *respReply) reasoning() *reasoningItem {
	if len(r.a.reasoning) == 0 {
		return nil
	}
	it := &reasoningItem{Type: "reasoning", ID: "rs_sim" + r.a.id,
		Summary: []summaryPart{{Type: "summary_text", Text: r.a.reasoningString()}}}
	if r.encrypt {
		it.EncryptedContent = base64.StdEncoding.EncodeToString([]byte("simulated reasoning " + r.a.id))
	}
	return it
}

// message is the text item; a reply whose whole budget went to reasoning has none.
func (r *respReply) message() *messageItem {
	if r.a.tool != nil || (len(r.a.text) == 0 && len(r.a.reasoning) > 0) {
		return nil
	}
	status := "completed"
	if r.a.truncated {
		status = "incomplete"
	}
	return &messageItem{Type: "message", ID: "msg_sim" + r.a.id, Status: status, Role: "assistant",
		Content: []textPart{newTextPart(r.a.textString())}}
}

func (r *respReply) call() *functionCallItem {
	if r.a.tool == nil {
		return nil
	}
	return &functionCallItem{Type: "function_call", ID: "fc_sim" + r.a.id, CallID: "call_sim" + r.a.id,
		Name: r.a.tool.name, Arguments: r.a.tool.args, Status: "completed"}
}

func newTextPart(text string) textPart {
	return textPart{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []any{}}
}

// orJSON is raw when the request had the field, def otherwise.
func orJSON(raw json.RawMessage, def string) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(def)
	}
	return raw
}

func serveResponses(x *exchange) {
	var q responsesRequest
	a, ok := x.planned(&q)
	if !ok {
		return
	}
	r := &respReply{q: &q, a: a, created: x.now()}
	for _, inc := range q.Include {
		r.encrypt = r.encrypt || inc == "reasoning.encrypted_content"
	}
	if !q.Stream {
		x.writeJSON(a, a.output(), r.final())
		return
	}
	streamResponses(x, r)
}

func streamResponses(x *exchange, r *respReply) {
	a := r.a
	seq := 0
	var s *streamer
	emit := func(e respEvent) {
		e.SequenceNumber = seq
		seq++
		s.json(e.Type, e)
	}
	midError := func(s *streamer) {
		st := a.d.midStatus(500)
		oe := newOpenAIError(st, "simulated mid-stream failure (#sim:error-mid)")
		code := oe.Type
		if oe.Code != nil {
			code = *oe.Code
		}
		if a.d.errorMid == "failed" {
			o := r.base("failed")
			o.Error = mustJSON(struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			}{code, oe.Message})
			emit(respEvent{Type: "response.failed", Response: o})
			return
		}
		s.json("error", respErrorEvent{Type: "error", Code: &code, Message: oe.Message, SequenceNumber: seq})
		seq++
	}
	s = x.startStream(a, a.output(), "\n\n", midError)
	emit(respEvent{Type: "response.created", Response: r.base("in_progress")})
	emit(respEvent{Type: "response.in_progress", Response: r.base("in_progress")})
	out := 0
	if it := r.reasoning(); it != nil {
		id, idx := it.ID, ptr(out)
		emit(respEvent{Type: "response.output_item.added", OutputIndex: idx, Item: reasoningItem{Type: "reasoning", ID: id, Summary: []summaryPart{}}})
		emit(respEvent{Type: "response.reasoning_summary_part.added", ItemID: id, OutputIndex: idx, SummaryIndex: ptr(0), Part: summaryPart{Type: "summary_text"}})
		for _, d := range a.reasoning {
			if !s.step() {
				return
			}
			emit(respEvent{Type: "response.reasoning_summary_text.delta", ItemID: id, OutputIndex: idx, SummaryIndex: ptr(0), Delta: ptr(d)})
		}
		text := a.reasoningString()
		emit(respEvent{Type: "response.reasoning_summary_text.done", ItemID: id, OutputIndex: idx, SummaryIndex: ptr(0), Text: &text})
		emit(respEvent{Type: "response.reasoning_summary_part.done", ItemID: id, OutputIndex: idx, SummaryIndex: ptr(0), Part: it.Summary[0]})
		emit(respEvent{Type: "response.output_item.done", OutputIndex: idx, Item: it})
		out++
	}
	if it := r.message(); it != nil {
		id, idx, ci := it.ID, ptr(out), ptr(0)
		emit(respEvent{Type: "response.output_item.added", OutputIndex: idx,
			Item: messageItem{Type: "message", ID: id, Status: "in_progress", Role: "assistant", Content: []textPart{}}})
		emit(respEvent{Type: "response.content_part.added", ItemID: id, OutputIndex: idx, ContentIndex: ci, Part: newTextPart("")})
		for _, d := range a.text {
			if !s.step() {
				return
			}
			emit(respEvent{Type: "response.output_text.delta", ItemID: id, OutputIndex: idx, ContentIndex: ci, Delta: ptr(d), Logprobs: &[]any{}})
		}
		text := a.textString()
		emit(respEvent{Type: "response.output_text.done", ItemID: id, OutputIndex: idx, ContentIndex: ci, Text: &text, Logprobs: &[]any{}})
		emit(respEvent{Type: "response.content_part.done", ItemID: id, OutputIndex: idx, ContentIndex: ci, Part: it.Content[0]})
		emit(respEvent{Type: "response.output_item.done", OutputIndex: idx, Item: it})
		out++
	}
	if it := r.call(); it != nil {
		idx := ptr(out)
		added := *it
		added.Arguments, added.Status = "", "in_progress"
		emit(respEvent{Type: "response.output_item.added", OutputIndex: idx, Item: added})
		for _, f := range a.tool.fragments {
			if !s.step() {
				return
			}
			emit(respEvent{Type: "response.function_call_arguments.delta", ItemID: it.ID, OutputIndex: idx, Delta: ptr(f)})
		}
		emit(respEvent{Type: "response.function_call_arguments.done", ItemID: it.ID, OutputIndex: idx, Name: it.Name, Arguments: &it.Arguments})
		emit(respEvent{Type: "response.output_item.done", OutputIndex: idx, Item: it})
	}
	if !s.end() {
		return
	}
	final := r.final()
	emit(respEvent{Type: "response." + final.Status, Response: final})
}

type compactedResponse struct {
	ID        string     `json:"id"`
	Object    string     `json:"object"`
	CreatedAt int64      `json:"created_at"`
	Output    []any      `json:"output"`
	Usage     *respUsage `json:"usage"`
}

type compactionItem struct {
	Type             string `json:"type"`
	ID               string `json:"id"`
	EncryptedContent string `json:"encrypted_content"`
}

type inputMessageItem struct {
	Type    string      `json:"type"`
	ID      string      `json:"id"`
	Status  string      `json:"status"`
	Role    string      `json:"role"`
	Content []inputText `json:"content"`
}

type inputText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// serveCompact keeps the user messages and replaces the rest with one opaque compaction item,
// as the real endpoint does.
func serveCompact(x *exchange) {
	var q responsesRequest
	a, ok := x.planned(&q)
	if !ok {
		return
	}
	var out []any
	for i, it := range q.items() {
		if (it.Type == "" || it.Type == "message") && (it.Role == "user" || it.Role == "") {
			out = append(out, inputMessageItem{Type: "message", ID: "msg_sim" + a.id + "_" + strconv.Itoa(i),
				Status: "completed", Role: "user", Content: []inputText{{"input_text", textOf(it.Content)}}})
		}
	}
	blob := base64.StdEncoding.EncodeToString([]byte("simulated compaction of " + strconv.Itoa(a.input) + " tokens " + a.id))
	out = append(out, compactionItem{Type: "compaction", ID: "cmp_sim" + a.id, EncryptedContent: blob})
	u := &respUsage{InputTokens: a.input, OutputTokens: len(blob) / 4}
	u.InputTokensDetails.CachedTokens = a.cached
	u.TotalTokens = u.InputTokens + u.OutputTokens
	x.writeJSON(a, 1, compactedResponse{ID: "resp_sim" + a.id, Object: "response.compaction",
		CreatedAt: x.now(), Output: out, Usage: u})
}

func serveResponsesInputTokens(x *exchange) {
	var q responsesRequest
	a, ok := x.planned(&q)
	if !ok {
		return
	}
	x.writeJSON(nil, 1, struct {
		Object      string `json:"object"`
		InputTokens int    `json:"input_tokens"`
	}{"response.input_tokens", a.input})
}
