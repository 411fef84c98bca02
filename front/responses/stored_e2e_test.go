package responses_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"

	"modelgateway/core/gatewaytest"
)

// Stored responses (contract.md "Stored responses"): a conversation continued with
// previous_response_id across the three upstream kinds, each upstream seeing the whole
// conversation in its own wire shape, and every refusal of an id that cannot be continued.

var weatherTool = responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
	Name: "get_weather", Strict: openai.Bool(false),
	Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
}}

// texts are the strings at the gjson path in the body, in order.
func texts(body []byte, path string) []string {
	var out []string
	for _, r := range gjson.GetBytes(body, path).Array() {
		out = append(out, r.String())
	}
	return out
}

// openaiClient is openai-go on the gateway with the profile's key, without retries.
func openaiClient(g *gatewaytest.Gen, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(g.Base + "/v1/"), option.WithAPIKey(g.Key), option.WithMaxRetries(0)}, opts...)...)
}

// callsTo are the upstream requests after the first n to a path containing sub.
func callsTo(g *gatewaytest.Gen, n int, sub string) []gatewaytest.Call {
	var out []gatewaytest.Call
	for _, c := range g.Up.Calls()[n:] {
		if strings.Contains(c.Path, sub) {
			out = append(out, c)
		}
	}
	return out
}

func TestStoredConversationAcrossUpstreamKinds(t *testing.T) {
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	ctx := context.Background()
	c := openaiClient(g)

	// Turn 1, on the OpenAI upstream (passthrough).
	n := len(g.Up.Calls())
	r1, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "m-openai",
		Instructions: openai.String("first instructions"),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("my name is Ada")}})
	if err != nil {
		t.Fatal(err)
	}
	up := callsTo(g, n, "/v1/responses")
	if len(up) != 1 {
		t.Fatalf("turn 1: %d upstream calls", len(up))
	}
	if !strings.HasPrefix(r1.ID, "resp_") || !gjson.Get(r1.RawJSON(), "store").Bool() {
		t.Fatalf("turn 1: id %q: %s", r1.ID, r1.RawJSON())
	}
	answer1 := r1.OutputText()
	if answer1 == "" {
		t.Fatal("turn 1 answered no text")
	}

	// Turn 2, on the Anthropic upstream, with a tool: the model calls it.
	n = len(g.Up.Calls())
	r2, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "m-anthropic",
		PreviousResponseID: openai.String(r1.ID), Tools: []responses.ToolUnionParam{weatherTool},
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("what is the weather in Paris?")}})
	if err != nil {
		t.Fatal(err)
	}
	up = callsTo(g, n, "/v1/messages")
	if len(up) != 1 {
		t.Fatalf("turn 2: %d upstream calls to /v1/messages", len(up))
	}
	body := up[0].Body
	if got := texts(body, "messages.#.role"); strings.Join(got, ",") != "user,assistant,user" {
		t.Errorf("turn 2: the Anthropic upstream saw roles %v, want user,assistant,user: %s", got, body)
	}
	if all := string(body); !strings.Contains(all, "my name is Ada") || !strings.Contains(all, answer1) ||
		!strings.Contains(all, "what is the weather in Paris?") {
		t.Errorf("turn 2: the conversation is not all there: %s", body)
	}
	if strings.Contains(string(body), "first instructions") {
		t.Errorf("turn 2: the earlier instructions were carried over: %s", body)
	}
	if r2.PreviousResponseID != r1.ID {
		t.Errorf("turn 2 echoes previous_response_id %q, want %q", r2.PreviousResponseID, r1.ID)
	}
	var call responses.ResponseFunctionToolCall
	for _, it := range r2.Output {
		if it.Type == "function_call" {
			call = it.AsFunctionCall()
		}
	}
	if call.CallID == "" {
		t.Fatalf("turn 2: no function call in %s", r2.RawJSON())
	}

	// Turn 3, on the Gemini upstream, streamed: the tool's output.
	n = len(g.Up.Calls())
	s := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "m-gemini",
		PreviousResponseID: openai.String(r2.ID), Tools: []responses.ToolUnionParam{weatherTool},
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
				CallID: openai.String(call.CallID),
				Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String("sunny, 21C")}}},
		}}})
	var r3 *responses.Response
	for s.Next() {
		if ev := s.Current(); ev.Type == "response.completed" {
			done := ev.AsResponseCompleted().Response
			r3 = &done
		}
	}
	if err := s.Err(); err != nil || r3 == nil {
		t.Fatalf("turn 3: %v, completed %v", err, r3 != nil)
	}
	up = callsTo(g, n, ":streamGenerateContent")
	if len(up) != 1 {
		t.Fatalf("turn 3: %d upstream calls to Gemini", len(up))
	}
	body = up[0].Body
	if got := texts(body, "contents.#.role"); strings.Join(got, ",") != "user,model,user,model,user" {
		t.Errorf("turn 3: the Gemini upstream saw roles %v: %s", got, body)
	}
	if fc := gjson.GetBytes(body, "contents.3.parts.#(functionCall).functionCall.name").String(); fc != "get_weather" {
		t.Errorf("turn 3: no functionCall of the earlier turn: %s", body)
	}
	if fr := gjson.GetBytes(body, "contents.4.parts.0.functionResponse").Raw; !strings.Contains(fr, "sunny, 21C") {
		t.Errorf("turn 3: no functionResponse: %s", body)
	}
	if !strings.Contains(string(body), "my name is Ada") {
		t.Errorf("turn 3: the first turn is missing: %s", body)
	}

	// Turn 4, back on the OpenAI upstream: it gets every item, none with the gateway's ids,
	// and never the gateway's previous_response_id.
	n = len(g.Up.Calls())
	r4, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "m-openai",
		PreviousResponseID: openai.String(r3.ID),
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("thanks")}})
	if err != nil {
		t.Fatal(err)
	}
	up = callsTo(g, n, "/v1/responses")
	if len(up) != 1 {
		t.Fatalf("turn 4: %d upstream calls", len(up))
	}
	body = up[0].Body
	if gjson.GetBytes(body, "previous_response_id").Exists() {
		t.Errorf("turn 4: the gateway's id went upstream: %s", body)
	}
	types := texts(body, "input.#.type")
	want := "message,message,message,function_call,function_call_output,message,message"
	if strings.Join(types, ",") != want {
		t.Errorf("turn 4: upstream input types %v, want %s", types, want)
	}
	if ids := texts(body, "input.#.id"); len(ids) != 0 {
		t.Errorf("turn 4: the upstream got item ids %v", ids)
	}
	if !strings.HasPrefix(r4.ID, "resp_") || r4.PreviousResponseID != r3.ID {
		t.Errorf("turn 4: id %q previous %q", r4.ID, r4.PreviousResponseID)
	}

	// The expanded input is what is counted and charged: turn 4's input tokens are those of
	// the whole conversation, far more than "thanks" alone.
	if r4.Usage.InputTokens <= r1.Usage.InputTokens {
		t.Errorf("turn 4 counted %d input tokens, turn 1 %d: the conversation was not counted", r4.Usage.InputTokens, r1.Usage.InputTokens)
	}
	gatewaytest.Settled(t, g.Pool(), g.ProfileID, 4)

	// Retrieval: the stored objects, and turn 3's own input items.
	got, err := c.Responses.Get(ctx, r3.ID, responses.ResponseGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != r3.ID || got.Status != "completed" || got.PreviousResponseID != r2.ID || got.OutputText() != r3.OutputText() {
		t.Errorf("GET turn 3: %s", got.RawJSON())
	}
	got1, err := c.Responses.Get(ctx, r1.ID, responses.ResponseGetParams{})
	if err != nil || got1.ID != r1.ID || got1.OutputText() != answer1 {
		t.Errorf("GET turn 1 (passthrough): %v %v", err, got1)
	}
	items, err := c.Responses.InputItems.List(ctx, r3.ID, responses.InputItemListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(items.Data) != 1 || items.Data[0].Type != "function_call_output" || items.Data[0].ID == "" || items.HasMore {
		t.Errorf("turn 3 input items: %s", items.RawJSON())
	}
}

// Paging of input_items: newest first by default, after and limit as OpenAI's.
func TestStoredResponseInputItemsPaging(t *testing.T) {
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	ctx := context.Background()
	c := openaiClient(g)
	var in responses.ResponseInputParam
	for _, s := range []string{"one", "two", "three"} {
		in = append(in, responses.ResponseInputItemParamOfMessage(s, responses.EasyInputMessageRoleUser))
	}
	r, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "m-anthropic",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: in}})
	if err != nil {
		t.Fatal(err)
	}
	text := func(it responses.ResponseItemUnion) string { return gjson.Get(it.RawJSON(), "content.0.text").String() }
	page, err := c.Responses.InputItems.List(ctx, r.ID, responses.InputItemListParams{Limit: openai.Int(2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 2 || text(page.Data[0]) != "three" || text(page.Data[1]) != "two" || !page.HasMore {
		t.Fatalf("first page: %s", page.RawJSON())
	}
	next, err := c.Responses.InputItems.List(ctx, r.ID, responses.InputItemListParams{Limit: openai.Int(2), After: openai.String(page.Data[1].ID)})
	if err != nil || len(next.Data) != 1 || text(next.Data[0]) != "one" || next.HasMore {
		t.Fatalf("second page: %v %s", err, next.RawJSON())
	}
	all := 0
	iter := c.Responses.InputItems.ListAutoPaging(ctx, r.ID, responses.InputItemListParams{Limit: openai.Int(1), Order: responses.InputItemListParamsOrderAsc})
	var order []string
	for iter.Next() {
		all++
		order = append(order, text(iter.Current()))
	}
	if iter.Err() != nil || strings.Join(order, ",") != "one,two,three" {
		t.Fatalf("auto paging asc: %v %v", iter.Err(), order)
	}
	code, _, _ := g.Do("GET", "/v1/responses/"+r.ID+"/input_items?limit=101", gatewaytest.Bearer(g.Key), "")
	if code != 400 {
		t.Errorf("limit 101: %d, want 400", code)
	}
}

// apiErr is the status, code and param of an SDK error.
func apiErr(t *testing.T, err error) (int, string, string) {
	t.Helper()
	var e *openai.Error
	if !errors.As(err, &e) {
		t.Fatalf("not an API error: %v", err)
	}
	return e.StatusCode, e.Code, e.Param
}

func TestStoredResponseRefusals(t *testing.T) {
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	ctx := context.Background()
	c := openaiClient(g)
	newResp := func(model string, opts ...func(*responses.ResponseNewParams)) *responses.Response {
		t.Helper()
		p := responses.ResponseNewParams{Model: model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}}
		for _, o := range opts {
			o(&p)
		}
		r, err := c.Responses.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	continueWith := func(id string) error {
		_, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "m-anthropic", PreviousResponseID: openai.String(id),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("more")}})
		return err
	}
	// refused: 400 invalid_request_error naming previous_response_id, nothing upstream, no
	// money moved. The positive case first: a stored response continues.
	stored := newResp("m-anthropic")
	if err := continueWith(stored.ID); err != nil {
		t.Fatalf("a stored response does not continue: %v", err)
	}
	balance := gatewaytest.Settled(t, g.Pool(), g.ProfileID, 2)
	refused := func(what, id string) {
		t.Helper()
		n := len(g.Up.Calls())
		err := continueWith(id)
		if err == nil {
			t.Errorf("%s: continued", what)
			return
		}
		status, code, param := apiErr(t, err)
		if status != 400 || code != "invalid_request_error" || param != "previous_response_id" {
			t.Errorf("%s: %d %s param %q", what, status, code, param)
		}
		if calls := len(g.Up.Calls()) - n; calls != 0 {
			t.Errorf("%s: %d upstream calls", what, calls)
		}
	}

	notStored := newResp("m-openai", func(p *responses.ResponseNewParams) { p.Store = openai.Bool(false) })
	if gjson.Get(notStored.RawJSON(), "store").Bool() {
		t.Errorf("store:false echoed store true")
	}
	balance = gatewaytest.Settled(t, g.Pool(), g.ProfileID, 3)
	refused("store:false", notStored.ID)
	refused("unknown", "resp_0123456789abcdef0123456789abcdef")

	// Deleted: gone for GET and for continuation; the answer is OpenAI's deletion object.
	del := newResp("m-gemini")
	code, _, out := g.Do("DELETE", "/v1/responses/"+del.ID, gatewaytest.Bearer(g.Key), "")
	if code != 200 || out["object"] != "response.deleted" || out["deleted"] != true || out["id"] != del.ID {
		t.Errorf("DELETE: %d %v", code, out)
	}
	if code, _, out := g.Do("GET", "/v1/responses/"+del.ID, gatewaytest.Bearer(g.Key), ""); code != 404 || gatewaytest.Code(out) != "not_found" {
		t.Errorf("GET deleted: %d %v", code, out)
	}
	if code, _, _ := g.Do("DELETE", "/v1/responses/"+del.ID, gatewaytest.Bearer(g.Key), ""); code != 404 {
		t.Errorf("DELETE twice: %d", code)
	}
	balance = gatewaytest.Settled(t, g.Pool(), g.ProfileID, 4)
	refused("deleted", del.ID)

	// A chain through a deleted response is refused, not continued without it.
	a := newResp("m-anthropic")
	b, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "m-anthropic", PreviousResponseID: openai.String(a.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("b")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Responses.Delete(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	balance = gatewaytest.Settled(t, g.Pool(), g.ProfileID, 6)
	refused("chain through a deleted response", b.ID)

	// Another profile: 404 for the routes, 400 for continuation, nothing deleted.
	otherKey, _ := g.NewProfile("other", "100")
	other := openaiClient(g, option.WithAPIKey(otherKey))
	if _, err := other.Responses.Get(ctx, stored.ID, responses.ResponseGetParams{}); err == nil {
		t.Error("another profile read the response")
	} else if status, code, _ := apiErr(t, err); status != 404 || code != "not_found" {
		t.Errorf("another profile GET: %d %s", status, code)
	}
	if err := other.Responses.Delete(ctx, stored.ID); err == nil {
		t.Error("another profile deleted the response")
	}
	if _, err := other.Responses.InputItems.List(ctx, stored.ID, responses.InputItemListParams{}); err == nil {
		t.Error("another profile listed the input items")
	}
	_, err = other.Responses.New(ctx, responses.ResponseNewParams{Model: "m-anthropic", PreviousResponseID: openai.String(stored.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("steal")}})
	if err == nil {
		t.Error("another profile continued the response")
	} else if status, code, param := apiErr(t, err); status != 400 || code != "invalid_request_error" || param != "previous_response_id" {
		t.Errorf("another profile continuing: %d %s %q", status, code, param)
	}

	// A second key of the storing profile reads, lists and continues.
	k2 := g.Admin("POST", "/admin/v1/profiles/"+g.ProfileID+"/keys", `{"name":"second","allowed_endpoints":["responses"],"allowed_models":["*"]}`)["secret"].(string)
	second := openaiClient(g, option.WithAPIKey(k2))
	if got, err := second.Responses.Get(ctx, stored.ID, responses.ResponseGetParams{}); err != nil || got.ID != stored.ID {
		t.Errorf("second key GET: %v", err)
	}
	// A key of the profile without the responses family: endpoint_not_allowed.
	k3 := g.Admin("POST", "/admin/v1/profiles/"+g.ProfileID+"/keys", `{"name":"chat","allowed_endpoints":["chat.completions"],"allowed_models":["*"]}`)["secret"].(string)
	if code, _, out := g.Do("GET", "/v1/responses/"+stored.ID, gatewaytest.Bearer(k3), ""); code != 403 || gatewaytest.Code(out) != "endpoint_not_allowed" {
		t.Errorf("key without the family: %d %v", code, out)
	}
	if code, _, out := g.Do("GET", "/v1/responses/"+stored.ID, nil, ""); code != 401 || gatewaytest.Code(out) != "invalid_key" {
		t.Errorf("no key: %d %v", code, out)
	}
	if code, _, _ := g.Do("POST", "/v1/responses/"+stored.ID, gatewaytest.Bearer(g.Key), "{}"); code != 405 {
		t.Errorf("POST on a stored response: %d", code)
	}
	// No money moved by any refusal; the ledger still adds up.
	if after := gatewaytest.Settled(t, g.Pool(), g.ProfileID, 6); !after.Equal(balance) {
		t.Errorf("refusals moved money: %s -> %s", balance, after)
	}
	// The compact route stores nothing.
	if code, _, _ := g.Post("/v1/responses/compact", nil, `{"model":"m-openai","input":"hello"}`); code != http.StatusOK {
		t.Logf("compact answered %d", code)
	}
	var n int
	if err := g.Pool().QueryRow(ctx, `SELECT count(*) FROM stored_responses WHERE response->>'object' <> 'response'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("something other than a response was stored: %d %v", n, err)
	}
}

// An expired response is gone; the purge removes it and keeps what a live one continues.
func TestStoredResponseExpiry(t *testing.T) {
	g := gatewaytest.StartGen(t, gatewaytest.Options{Env: []string{"GATEWAY_RESPONSES_TTL=2s"}})
	ctx := context.Background()
	c := openaiClient(g)
	r, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "m-anthropic",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Responses.Get(ctx, r.ID, responses.ResponseGetParams{}); err != nil {
		t.Fatalf("fresh response: %v", err)
	}
	time.Sleep(2500 * time.Millisecond)
	if _, err := c.Responses.Get(ctx, r.ID, responses.ResponseGetParams{}); err == nil {
		t.Fatal("an expired response was read")
	}
	n := len(g.Up.Calls())
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "m-anthropic", PreviousResponseID: openai.String(r.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("more")}})
	if err == nil {
		t.Fatal("an expired response was continued")
	}
	if status, code, param := apiErr(t, err); status != 400 || code != "invalid_request_error" || param != "previous_response_id" || len(g.Up.Calls()) != n {
		t.Errorf("expired: %d %s %q", status, code, param)
	}
}

// The hold of a continued request counts the whole conversation, before anything goes
// upstream: with a balance that covers the same request sent alone, a continuation whose
// stored turns are long is refused with insufficient_balance and reaches no upstream.
func TestStoredConversationIsHeldInFull(t *testing.T) {
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	long := strings.Repeat("lorem ", 33000) // about 200 kB: a hold of about 0.1 at 1 per 1M
	status, _, raw := g.Post("/v1/responses", nil, `{"model":"m-anthropic","max_output_tokens":16,"input":"`+long+`"}`)
	if status != 200 {
		t.Fatalf("turn 1: %d %s", status, raw)
	}
	first := gjson.GetBytes(raw, "id").String()
	balance := gatewaytest.Settled(t, g.Pool(), g.ProfileID, 1)
	// An output limit that leaves 0.05 of the balance for input: enough for "hi" alone, not
	// for the conversation.
	out := balance.Sub(decimal.RequireFromString("0.05")).Shift(6).Div(decimal.NewFromInt(2)).IntPart()
	body := func(prev string) string {
		b := `{"model":"m-anthropic","max_output_tokens":` + strconv.FormatInt(out, 10) + `,"input":"hi"`
		if prev != "" {
			b += `,"previous_response_id":"` + prev + `"`
		}
		return b + "}"
	}
	if status, _, raw := g.Post("/v1/responses", nil, body("")); status != 200 {
		t.Fatalf("the request alone: %d %s", status, raw)
	}
	balance = gatewaytest.Settled(t, g.Pool(), g.ProfileID, 2)
	n := len(g.Up.Calls())
	status, _, raw = g.Post("/v1/responses", nil, body(first))
	if code, _, _ := gatewaytest.Envelope(t, raw); status != 402 || code != "insufficient_balance" {
		t.Errorf("continuation: %d %s, want 402 insufficient_balance", status, raw)
	}
	if calls := len(g.Up.Calls()) - n; calls != 0 {
		t.Errorf("the refused continuation made %d upstream calls", calls)
	}
	if after := gatewaytest.Settled(t, g.Pool(), g.ProfileID, 2); !after.Equal(balance) {
		t.Errorf("the refusal moved money: %s -> %s", balance, after)
	}
}

// sseResponses are the response objects of a responses stream's lifecycle events, by event.
func sseResponses(t *testing.T, raw []byte) (ids map[string]string, last gjson.Result) {
	t.Helper()
	ids = map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		ev := gjson.Parse(data)
		if r := ev.Get("response"); r.Exists() {
			ids[ev.Get("type").String()] = r.Get("id").String()
			last = r
		}
	}
	return ids, last
}

// Streams are stored when their terminal event goes out, under the id every lifecycle event
// showed; a stream cut off upstream is stored failed, as OpenAI does.
func TestStoredStreams(t *testing.T) {
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	cases := []struct {
		name, model, input, status string
	}{
		{"passthrough", "m-openai", "hello", "completed"},
		{"translated", "m-anthropic", "hello", "completed"},
		{"translated cut off", "m-anthropic", "hello #sim:cut", "failed"},
		{"passthrough failed upstream", "m-openai", "hello #sim:error-mid=failed", "failed"},
	}
	for _, c := range cases {
		status, _, raw := g.Post("/v1/responses", nil, `{"model":"`+c.model+`","stream":true,"input":"`+c.input+`"}`)
		if status != 200 {
			t.Fatalf("%s: %d %s", c.name, status, raw)
		}
		ids, last := sseResponses(t, raw)
		id := ids["response.created"]
		if !strings.HasPrefix(id, "resp_") || last.Get("status").String() != c.status {
			t.Errorf("%s: created %q, terminal %s", c.name, id, last.Raw)
			continue
		}
		for ev, other := range ids {
			if other != id {
				t.Errorf("%s: %s shows id %q, response.created %q", c.name, ev, other, id)
			}
		}
		code, _, got := g.Do("GET", "/v1/responses/"+id, gatewaytest.Bearer(g.Key), "")
		if code != 200 || got["id"] != id || got["status"] != c.status {
			t.Errorf("%s: GET %d %v", c.name, code, got)
		}
	}
}
