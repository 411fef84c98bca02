package main

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"
)

// sseData returns the (event name, data) pairs of an SSE body.
func sseData(raw []byte) (names []string, data [][]byte) {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			names = append(names, name)
			data = append(data, []byte(strings.TrimSpace(strings.TrimPrefix(line, "data:"))))
			name = ""
		}
	}
	return names, data
}

// A streamed answer shows what it cost where each protocol's clients read usage, with the
// currency beside it, in every pairing of client protocol and upstream kind (passthrough and
// translated), and the amount is the one charged.
func TestStreamsShowTheirCost(t *testing.T) {
	g := startGen(t)
	key, pid := g.newProfile(t, "cost-1", "10")
	anth := map[string]string{"anthropic-version": "2023-06-01"}
	protocols := []struct {
		name, path, body string
		headers          map[string]string
		// find returns the usage object that should carry the cost.
		find func(names []string, data [][]byte) gjson.Result
	}{
		{"chat", "/v1/chat/completions", `{"model":"MODEL","stream":true,"messages":[{"role":"user","content":"hi"}]}`, nil,
			func(_ []string, data [][]byte) gjson.Result {
				for i := len(data) - 1; i >= 0; i-- {
					if u := gjson.GetBytes(data[i], "usage"); u.IsObject() {
						return u
					}
				}
				return gjson.Result{}
			}},
		{"responses", "/v1/responses", `{"model":"MODEL","stream":true,"input":"hi"}`, nil,
			func(names []string, data [][]byte) gjson.Result {
				for i, n := range names {
					if n == "response.completed" {
						return gjson.GetBytes(data[i], "response.usage")
					}
				}
				return gjson.Result{}
			}},
		{"messages", "/v1/messages", `{"model":"MODEL","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, anth,
			func(names []string, data [][]byte) gjson.Result {
				for i, n := range names {
					if n == "message_delta" {
						return gjson.GetBytes(data[i], "usage")
					}
				}
				return gjson.Result{}
			}},
		{"content generation", "/v1beta/models/MODEL:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, nil,
			func(_ []string, data [][]byte) gjson.Result {
				for i := len(data) - 1; i >= 0; i-- {
					if u := gjson.GetBytes(data[i], "usageMetadata"); u.IsObject() {
						return u
					}
				}
				return gjson.Result{}
			}},
	}
	shown := map[string]decimal.Decimal{}
	for _, p := range protocols {
		for _, model := range []string{"m-openai", "m-anthropic", "m-gemini"} {
			id := "cost-" + strings.ReplaceAll(p.name, " ", "-") + "-" + model
			h := map[string]string{"X-Request-Id": id}
			for k, v := range p.headers {
				h[k] = v
			}
			status, _, raw := g.postAs(t, key, strings.Replace(p.path, "MODEL", model, 1), h, strings.Replace(p.body, "MODEL", model, 1))
			if status != 200 {
				t.Fatalf("%s: %d %s", id, status, raw)
			}
			u := p.find(sseData(raw))
			cost, cur := u.Get("cost"), u.Get("currency")
			if cost.Type != gjson.Number || cur.String() != "RUB" {
				t.Errorf("%s: usage %s has no cost number with its currency", id, u.Raw)
				continue
			}
			shown[id] = decimal.RequireFromString(cost.Raw) // the exact digits, not a float
		}
	}
	g.settled(t, pid, len(protocols)*3)
	recs := g.admin("GET", "/admin/v1/profiles/"+pid+"/usage", "")["records"].([]any)
	for _, r := range recs {
		rec := r.(map[string]any)
		id := rec["request_id"].(string)
		want := decimal.RequireFromString(rec["cost"].(string))
		if got, ok := shown[id]; ok && !got.Equal(want) {
			t.Errorf("%s: the stream showed %s, the charge was %s", id, got, want)
		}
		if want.IsZero() {
			t.Errorf("%s: a zero charge proves nothing", id)
		}
	}
}

// Translated messages streams carry the best known input count in message_start (LangChain
// reads input usage only there): a content-generation upstream's first-chunk count, the local
// count for a chat upstream; message_delta has the upstream's exact counts.
func TestMessagesStreamStartsWithTheInputCount(t *testing.T) {
	g := startGen(t)
	anth := map[string]string{"anthropic-version": "2023-06-01"}
	body := `{"model":"MODEL","max_tokens":64,"stream":true,"system":"You are terse.","messages":[{"role":"user","content":"How many words are in this question, please?"}]}`
	usageOf := func(model string) (start, delta gjson.Result) {
		status, _, raw := g.post(t, "/v1/messages", anth, strings.Replace(body, "MODEL", model, 1))
		if status != 200 {
			t.Fatalf("%s: %d %s", model, status, raw)
		}
		names, data := sseData(raw)
		for i, n := range names {
			switch n {
			case "message_start":
				start = gjson.GetBytes(data[i], "message.usage")
			case "message_delta":
				delta = gjson.GetBytes(data[i], "usage")
			}
		}
		return start, delta
	}

	// Gemini reports the prompt count in its first chunk: start and end agree.
	start, delta := usageOf("m-gemini")
	if in := start.Get("input_tokens").Int(); in == 0 || in != delta.Get("input_tokens").Int() {
		t.Errorf("gemini upstream: message_start %s, message_delta %s", start.Raw, delta.Raw)
	}

	// A chat upstream reports usage only at the end: the start has the local count, the same
	// number /v1/messages/count_tokens answers for a chat upstream.
	start, delta = usageOf("m-openai")
	_, _, counted := g.post(t, "/v1/messages/count_tokens", anth, strings.Replace(strings.Replace(body, "MODEL", "m-openai", 1), `"stream":true,`, "", 1))
	local := gjson.GetBytes(counted, "input_tokens").Int()
	if in := start.Get("input_tokens").Int(); local == 0 || in != local {
		t.Errorf("openai upstream: message_start input_tokens %d, local count %d (%s)", in, local, counted)
	}
	if delta.Get("input_tokens").Int() == 0 || delta.Get("output_tokens").Int() == 0 {
		t.Errorf("openai upstream: message_delta lacks the exact counts: %s", delta.Raw)
	}
}
