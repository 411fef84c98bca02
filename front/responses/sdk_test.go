package responses

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
)

// sdkEvents parses an encoder's stream the way openai-go does (client.Responses.NewStreaming).
func sdkEvents(t *testing.T, body []byte, oneByte bool) []responses.ResponseStreamEventUnion {
	t.Helper()
	var r io.Reader = bytes.NewReader(body)
	if oneByte {
		r = iotest.OneByteReader(r)
	}
	res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(r)}
	s := ssestream.NewStream[responses.ResponseStreamEventUnion](ssestream.NewDecoder(res), nil)
	defer s.Close()
	var out []responses.ResponseStreamEventUnion
	for s.Next() {
		out = append(out, s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatalf("openai-go stream error: %v", err)
	}
	if len(out) == 0 {
		t.Fatal("openai-go saw no events")
	}
	return out
}

// accumulated is what a client builds from the deltas.
type accumulated struct {
	typ, id, callID, name string
	text                  strings.Builder // message text, or summary text
	args                  strings.Builder
	parts                 int
	done                  bool
}

// checkStream enforces what the official stream helpers enforce (openai-responses.md,
// "Invariants"), and that the terminal response agrees with the deltas.
func checkStream(t *testing.T, events []responses.ResponseStreamEventUnion) responses.Response {
	t.Helper()
	if events[0].Type != "response.created" {
		t.Fatalf("first event %s, want response.created", events[0].Type)
	}
	var items []*accumulated
	ids, callIDs := map[string]bool{}, map[string]bool{}
	itemAt := func(e responses.ResponseStreamEventUnion, want string) *accumulated {
		if e.OutputIndex < 0 || int(e.OutputIndex) >= len(items) {
			t.Fatalf("#%d %s: output_index %d out of range", e.SequenceNumber, e.Type, e.OutputIndex)
		}
		it := items[e.OutputIndex]
		if it.id != e.ItemID || it.typ != want {
			t.Fatalf("#%d %s: item_id %q (%s), item at %d is %q (%s)", e.SequenceNumber, e.Type, e.ItemID, want, e.OutputIndex, it.id, it.typ)
		}
		if it.done {
			t.Fatalf("#%d %s: item %s already done", e.SequenceNumber, e.Type, it.id)
		}
		return it
	}
	terminals := 0
	for i, e := range events {
		if e.SequenceNumber != int64(i) {
			t.Fatalf("event %d (%s) has sequence_number %d", i, e.Type, e.SequenceNumber)
		}
		switch e.Type {
		case "response.output_item.added":
			if int(e.OutputIndex) != len(items) {
				t.Fatalf("#%d added at output_index %d, want %d (append only)", i, e.OutputIndex, len(items))
			}
			it := &accumulated{typ: e.Item.Type, id: e.Item.ID, callID: e.Item.CallID, name: e.Item.Name}
			if it.id == "" || ids[it.id] {
				t.Fatalf("#%d item id %q empty or reused", i, it.id)
			}
			ids[it.id] = true
			if it.typ == "function_call" {
				if it.callID == "" || callIDs[it.callID] {
					t.Fatalf("#%d call_id %q empty or reused", i, it.callID)
				}
				callIDs[it.callID] = true
			}
			items = append(items, it)
		case "response.content_part.added":
			it := itemAt(e, "message")
			if int(e.ContentIndex) != it.parts {
				t.Fatalf("#%d content_index %d, want %d", i, e.ContentIndex, it.parts)
			}
			it.parts++
		case "response.output_text.delta":
			itemAt(e, "message").text.WriteString(e.Delta)
		case "response.output_text.done":
			if it := itemAt(e, "message"); e.Text != it.text.String() {
				t.Errorf("#%d output_text.done %q, deltas gave %q", i, e.Text, it.text.String())
			}
		case "response.content_part.done":
			if it := itemAt(e, "message"); e.Part.Text != it.text.String() {
				t.Errorf("#%d content_part.done %q, deltas gave %q", i, e.Part.Text, it.text.String())
			}
		case "response.function_call_arguments.delta":
			itemAt(e, "function_call").args.WriteString(e.Delta)
		case "response.function_call_arguments.done":
			it := itemAt(e, "function_call")
			if got := it.args.String(); e.Arguments != got && !(got == "" && e.Arguments == "{}") {
				t.Errorf("#%d arguments.done %q, deltas gave %q", i, e.Arguments, got)
			}
			it.args.Reset()
			it.args.WriteString(e.Arguments)
		case "response.reasoning_summary_part.added", "response.reasoning_summary_part.done":
			itemAt(e, "reasoning")
		case "response.reasoning_summary_text.delta":
			itemAt(e, "reasoning").text.WriteString(e.Delta)
		case "response.reasoning_summary_text.done":
			if it := itemAt(e, "reasoning"); e.Text != it.text.String() {
				t.Errorf("#%d summary done %q, deltas gave %q", i, e.Text, it.text.String())
			}
		case "response.output_item.done":
			if int(e.OutputIndex) >= len(items) {
				t.Fatalf("#%d output_item.done for output_index %d never added", i, e.OutputIndex)
			}
			it := items[e.OutputIndex]
			if e.Item.ID != it.id || e.Item.Type != it.typ || e.Item.CallID != it.callID || it.done {
				t.Fatalf("#%d output_item.done changed identity or repeated: %s %s/%s, was %s %s/%s", i, e.Item.Type, e.Item.ID, e.Item.CallID, it.typ, it.id, it.callID)
			}
			it.done = true
		case "response.completed", "response.incomplete", "response.failed":
			terminals++
			if i != len(events)-1 {
				t.Fatalf("#%d terminal %s is not the last event", i, e.Type)
			}
		case "response.created", "response.in_progress":
			if e.Response.Status != "in_progress" || len(e.Response.Output) != 0 {
				t.Errorf("#%d %s: status %q, %d items", i, e.Type, e.Response.Status, len(e.Response.Output))
			}
		default:
			t.Errorf("#%d unexpected event %s", i, e.Type)
		}
	}
	if terminals != 1 {
		t.Fatalf("%d terminal events, want exactly 1", terminals)
	}
	final := events[len(events)-1].Response
	if len(final.Output) != len(items) {
		t.Fatalf("terminal output has %d items, the stream announced %d", len(final.Output), len(items))
	}
	for i, out := range final.Output {
		it := items[i]
		if out.ID != it.id || out.Type != it.typ || out.CallID != it.callID {
			t.Errorf("output[%d] = %s %s %s, stream had %s %s %s", i, out.Type, out.ID, out.CallID, it.typ, it.id, it.callID)
		}
		switch out.Type {
		case "message":
			if len(out.Content) != 1 || out.Content[0].Text != it.text.String() {
				t.Errorf("output[%d] content %+v, deltas gave %q", i, out.Content, it.text.String())
			}
		case "function_call":
			if out.Arguments.OfString != it.args.String() && final.Status != "failed" {
				t.Errorf("output[%d] arguments %q, stream gave %q", i, out.Arguments.OfString, it.args.String())
			}
		case "reasoning":
			var summary string
			for _, s := range out.Summary {
				summary += s.Text
			}
			if summary != it.text.String() {
				t.Errorf("output[%d] summary %q, deltas gave %q", i, summary, it.text.String())
			}
		}
	}
	return final
}

func TestEncoderStreamsParseWithOpenAIGo(t *testing.T) {
	t.Parallel()
	type want struct {
		status, reason, errCode string
		text                    string
		calls                   []string // name(call_id)
		input, cached, output   int64
	}
	wants := map[string]want{
		"text":                           {status: "completed", text: "Hello!", input: 10, cached: 4, output: 5},
		"text_and_two_tool_calls":        {status: "completed", text: "Let me check.", calls: []string{"get_weather(toolu_01A)", "get_time(toolu_01B)"}, input: 80, output: 40},
		"reasoning":                      {status: "completed", text: "4", input: 112, output: 30},
		"namespaced_tool_with_signature": {status: "completed", calls: []string{"crm.lookup(call_g1)", "crm.lookup(call_001)"}, input: 9, output: 7},
		"length":                         {status: "incomplete", reason: "max_output_tokens", text: "Once upon a", input: 4, output: 3},
		"content_filter":                 {status: "incomplete", reason: "content_filter", input: 4},
		"fail":                           {status: "failed", errCode: "upstream_error", text: "Checking", calls: []string{"get_weather(call_1)"}},
	}
	for _, c := range encCases {
		for _, oneByte := range []bool{false, true} {
			name := c.name + "/whole"
			if oneByte {
				name = c.name + "/one_byte_reads"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				w, ok := wants[c.name]
				if !ok {
					t.Fatalf("no expectation for %s", c.name)
				}
				final := checkStream(t, sdkEvents(t, run(t, c, true).Body.Bytes(), oneByte))
				if string(final.Status) != w.status || final.IncompleteDetails.Reason != w.reason || string(final.Error.Code) != w.errCode {
					t.Errorf("status %q reason %q error %q, want %q %q %q", final.Status, final.IncompleteDetails.Reason, final.Error.Code, w.status, w.reason, w.errCode)
				}
				if final.OutputText() != w.text {
					t.Errorf("output text %q, want %q", final.OutputText(), w.text)
				}
				var calls []string
				for _, o := range final.Output {
					if o.Type == "function_call" {
						name := o.Name
						if ns := o.AsFunctionCall().Namespace; ns != "" {
							name = ns + "." + name
						}
						calls = append(calls, name+"("+o.CallID+")")
					}
				}
				if strings.Join(calls, " ") != strings.Join(w.calls, " ") {
					t.Errorf("calls %v, want %v", calls, w.calls)
				}
				u := final.Usage
				if u.InputTokens != w.input || u.InputTokensDetails.CachedTokens != w.cached || u.OutputTokens != w.output || u.TotalTokens != w.input+w.output {
					t.Errorf("usage %s", u.RawJSON())
				}
				if final.ID != "resp_001" || final.Model != "team/model" || final.CreatedAt != 1761000000 {
					t.Errorf("id %q model %q created %v", final.ID, final.Model, final.CreatedAt)
				}
			})
		}
	}
}
