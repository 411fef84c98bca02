package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/simulator"
	"modelgateway/core/store/storetest"
	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
)

// Answers outrunning their holds (issue 30): an upstream that answers far beyond the output
// limit its request was held for (it ignores the limit, as a misbehaving or differently
// configured provider would), against profiles that can and cannot pay for the long answer.

// unlimited wraps the simulator so that it ignores every output limit of a request: the
// limit members are dropped (messages' required max_tokens is raised to a million instead).
func unlimited() *httptest.Server {
	sim := simulator.New(simulator.Options{})
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if json.Unmarshal(raw, &body) == nil {
			for _, k := range []string{"max_completion_tokens", "max_output_tokens"} {
				delete(body, k)
			}
			if _, ok := body["max_tokens"]; ok {
				body["max_tokens"] = 1_000_000
			}
			if gc, ok := body["generationConfig"].(map[string]any); ok {
				delete(gc, "maxOutputTokens")
			}
			raw, _ = json.Marshal(body)
		}
		r.Body = io.NopCloser(bytes.NewReader(raw))
		r.ContentLength = int64(len(raw))
		sim.ServeHTTP(w, r)
	}))
}

// holdsCatalog: output at 1000 per 1M tokens (0.001 a token), input free, on each upstream
// kind; h-input also prices input at 1000 per 1M.
const holdsCatalog = `{"currency":"RUB","families":[{"id":"fam"}],
  "providers":[
    {"id":"o","kind":"openai","base_url":"{{UP}}/v1","api_key_env":"UP_KEY"},
    {"id":"a","kind":"anthropic","base_url":"{{UP}}","api_key_env":"UP_KEY"},
    {"id":"m","kind":"gemini","base_url":"{{UP}}","api_key_env":"UP_KEY"}],
  "models":[
    {"id":"h-openai","family":"fam","routes":[{"endpoint_families":["chat.completions","responses","messages"],"provider":"o","upstream_model":"up-gpt"}],
     "prices":[{"endpoint_families":["chat.completions","responses","messages"],"billing_mode":"per_token","input":"0","output":"1000"}]},
    {"id":"h-anthropic","family":"fam","routes":[{"endpoint_families":["chat.completions","responses","messages"],"provider":"a","upstream_model":"up-claude"}],
     "prices":[{"endpoint_families":["chat.completions","responses","messages"],"billing_mode":"per_token","input":"0","output":"1000"}]},
    {"id":"h-gemini","family":"fam","routes":[{"endpoint_families":["content.generate"],"provider":"m","upstream_model":"up-gemini"}],
     "prices":[{"endpoint_families":["content.generate"],"billing_mode":"per_token","input":"0","output":"1000"}]},
    {"id":"h-gemini-openai","family":"fam","routes":[{"endpoint_families":["content.generate"],"provider":"o","upstream_model":"up-gpt"}],
     "prices":[{"endpoint_families":["content.generate"],"billing_mode":"per_token","input":"0","output":"1000"}]},
    {"id":"h-input","family":"fam","routes":[{"endpoint_families":["chat.completions","messages"],"provider":"a","upstream_model":"up-claude"}],
     "prices":[{"endpoint_families":["chat.completions","messages"],"billing_mode":"per_token","input":"1000","output":"1000"}]}]}`

func startHolds(t *testing.T) *genEnv {
	t.Helper()
	up := unlimited()
	t.Cleanup(up.Close)
	g := startGenOn(t, storetest.DatabaseURL(t), false)
	g.admin("POST", "/admin/v1/catalog:apply", strings.ReplaceAll(holdsCatalog, "{{UP}}", up.URL))
	return g
}

// delivered is the content a client read from a streamed answer in any of the three
// protocols (text and tool arguments), and the code of the error event that ended it ("" for
// none).
func delivered(raw []byte) (content, errCode string) {
	names, data := sseData(raw)
	var b strings.Builder
	for i, d := range data {
		name := names[i]
		if name == "" {
			name = gjson.GetBytes(d, "type").String()
		}
		for _, p := range []string{"error.details.0.reason", "error.code", "response.error.code"} {
			if c := gjson.GetBytes(d, p); c.Exists() && errCode == "" {
				errCode = c.String()
			}
		}
		// messages' error event names the class of error, not the gateway's code.
		if name == "error" && gjson.GetBytes(d, "error.type").String() == "billing_error" {
			errCode = apierror.InsufficientBalance
		}
		switch {
		case name == "content_block_delta":
			b.WriteString(gjson.GetBytes(d, "delta.text").String())
			b.WriteString(gjson.GetBytes(d, "delta.partial_json").String())
		case strings.HasPrefix(name, "response.") && strings.HasSuffix(name, ".delta"):
			b.WriteString(gjson.GetBytes(d, "delta").String())
		default:
			b.WriteString(gjson.GetBytes(d, "choices.0.delta.content").String())
			b.WriteString(gjson.GetBytes(d, "choices.0.delta.tool_calls.0.function.arguments").String())
			b.WriteString(gjson.GetBytes(d, "candidates.0.content.parts.0.text").String())
		}
	}
	return b.String(), errCode
}

var anthHeaders = map[string]string{"anthropic-version": "2023-06-01"}

// A streamed answer of 2000 words (about 14 KB, 2000 tokens) to a request held for 20 output
// tokens, in each client protocol (content generation too), passthrough and translated: with enough balance it is
// delivered whole and charged its full cost (the hold grew: the first hold covered 20 bytes of
// content); on a balance of 0.5 (500 tokens' worth) it ends with insufficient_balance after
// at most 500 bytes of content, and is not charged (spec 8: no usage, no charge).
func TestStreamsEndWhereTheBalanceEnds(t *testing.T) {
	t.Parallel()
	g := startHolds(t)
	const prompt = "#sim:words=2000 go"
	cases := []struct {
		name, path, body string
	}{
		{"chat passthrough", "/v1/chat/completions", `{"model":"h-openai","stream":true,"max_tokens":20,"messages":[{"role":"user","content":"` + prompt + `"}]}`},
		{"chat translated", "/v1/chat/completions", `{"model":"h-anthropic","stream":true,"max_tokens":20,"messages":[{"role":"user","content":"` + prompt + `"}]}`},
		{"messages passthrough", "/v1/messages", `{"model":"h-anthropic","stream":true,"max_tokens":20,"messages":[{"role":"user","content":"` + prompt + `"}]}`},
		{"messages translated", "/v1/messages", `{"model":"h-openai","stream":true,"max_tokens":20,"messages":[{"role":"user","content":"` + prompt + `"}]}`},
		{"responses passthrough", "/v1/responses", `{"model":"h-openai","stream":true,"max_output_tokens":20,"input":"` + prompt + `"}`},
		{"responses translated", "/v1/responses", `{"model":"h-anthropic","stream":true,"max_output_tokens":20,"input":"` + prompt + `"}`},
		{"content generation passthrough", "/v1beta/models/h-gemini:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"` + prompt + `"}]}],"generationConfig":{"maxOutputTokens":20}}`},
		{"content generation translated", "/v1beta/models/h-gemini-openai:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"` + prompt + `"}]}],"generationConfig":{"maxOutputTokens":20}}`},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rich, richID := g.newProfile(t, fmt.Sprint("rich-", i), "1000")
			status, _, raw := g.postAs(t, rich, c.path, anthHeaders, c.body)
			text, code := delivered(raw)
			if status != http.StatusOK || code != "" || strings.Count(text, " ") < 1990 {
				t.Fatalf("with 1000 on the balance: %d, error %q, %d bytes delivered: %.300s", status, code, len(text), raw)
			}
			if b := g.checkMoney(t, richID); !b.Equal(decimal.RequireFromString("998")) {
				t.Fatalf("with 1000 on the balance, the 2000-token answer left %s, want 998", b)
			}

			poor, poorID := g.newProfile(t, fmt.Sprint("poor-", i), "0.5")
			status, _, raw = g.postAs(t, poor, c.path, anthHeaders, c.body)
			text, code = delivered(raw)
			if code != apierror.InsufficientBalance {
				t.Fatalf("with 0.5 on the balance: %d, error %q after %d bytes: %.300s", status, code, len(text), raw)
			}
			// 0.5 pays for 500 tokens; no token is less than a byte of content.
			if len(text) > 500 || len(text) <= 20 {
				t.Fatalf("with 0.5 on the balance, %d bytes of content were delivered, want 20 < n <= 500", len(text))
			}
			if b := g.checkMoney(t, poorID); !b.Equal(decimal.RequireFromString("0.5")) {
				t.Fatalf("the cut answer left the balance at %s, want 0.5 (not charged)", b)
			}
			t.Logf("cut after %d bytes of content", len(text))
		})
	}
}

// Tool-call arguments count toward the running usage as text does: a call whose arguments
// are about 1.3 KB is delivered whole to a profile that can pay for it, and cut after at most
// 50 bytes of arguments for one that holds 0.05.
func TestToolArgumentsCountTowardTheHold(t *testing.T) {
	t.Parallel()
	g := startHolds(t)
	var props, required []string
	for i := range 40 {
		name := fmt.Sprintf("a_rather_long_property_name_%02d", i)
		props = append(props, `"`+name+`":{"type":"string"}`)
		required = append(required, `"`+name+`"`)
	}
	body := `{"model":"h-openai","stream":true,"max_tokens":20,"messages":[{"role":"user","content":"call it"}],
		"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{` + strings.Join(props, ",") +
		`},"required":[` + strings.Join(required, ",") + `]}}}]}`
	rich, richID := g.newProfile(t, "tools-rich", "10")
	status, _, raw := g.postAs(t, rich, "/v1/chat/completions", nil, body)
	args, code := delivered(raw)
	if status != http.StatusOK || code != "" || !json.Valid([]byte(args)) || len(args) < 1000 {
		t.Fatalf("with 10 on the balance: %d, error %q, arguments %q", status, code, args)
	}
	g.checkMoney(t, richID)

	poor, poorID := g.newProfile(t, "tools-poor", "0.05")
	_, _, raw = g.postAs(t, poor, "/v1/chat/completions", nil, body)
	args, code = delivered(raw)
	if code != apierror.InsufficientBalance || len(args) > 50 {
		t.Fatalf("with 0.05 on the balance: error %q after %d bytes of arguments", code, len(args))
	}
	if b := g.checkMoney(t, poorID); !b.Equal(decimal.RequireFromString("0.05")) {
		t.Fatalf("balance %s after the cut call, want 0.05", b)
	}
}

// Input the upstream counts beyond the estimate and reports at the start (messages'
// message_start: images, files, provider-side prompts) is counted before any content goes
// out: a profile that cannot pay for it gets the error event and no content; one that can
// gets the whole answer, charged the reported input.
func TestInputReportedAtTheStartIsHeldBeforeContent(t *testing.T) {
	t.Parallel()
	g := startHolds(t)
	body := `{"model":"h-input","stream":true,"max_tokens":20,"messages":[{"role":"user","content":"#sim:input=100000 #sim:words=12 hi"}]}`
	rich, richID := g.newProfile(t, "input-rich", "1000")
	status, _, raw := g.postAs(t, rich, "/v1/messages", anthHeaders, body)
	if text, code := delivered(raw); status != http.StatusOK || code != "" || strings.Count(text, " ") != 11 {
		t.Fatalf("with 1000 on the balance: %d, %q, %q", status, code, text)
	}
	// 100000 input and 12 output tokens at 0.001 each.
	if b := g.checkMoney(t, richID); !b.Equal(decimal.RequireFromString("899.988")) {
		t.Fatalf("balance %s, want 899.988", b)
	}
	poor, poorID := g.newProfile(t, "input-poor", "1")
	_, _, raw = g.postAs(t, poor, "/v1/messages", anthHeaders, body)
	if text, code := delivered(raw); code != apierror.InsufficientBalance || text != "" {
		t.Fatalf("with 1 on the balance: error %q, content %q", code, text)
	}
	if b := g.checkMoney(t, poorID); !b.Equal(decimal.RequireFromString("1")) {
		t.Fatalf("balance %s, want 1", b)
	}
}

// An image given by URL costs its request a fixed bound of input in its hold (the upstream
// counts thousands of tokens for what is a few bytes of body): a profile that can pay for the
// text alone is refused the same request with an image before anything goes upstream.
func TestImagesByReferenceAreHeld(t *testing.T) {
	t.Parallel()
	g := startHolds(t)
	key, pid := g.newProfile(t, "image-1", "1")
	text := `{"model":"h-input","max_tokens":20,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`
	if status, _, raw := g.postAs(t, key, "/v1/chat/completions", nil, text); status != http.StatusOK {
		t.Fatalf("text alone: %d %s", status, raw)
	}
	image := `{"model":"h-input","max_tokens":20,"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}`
	status, _, raw := g.postAs(t, key, "/v1/chat/completions", nil, image)
	if code, _, _ := envelope(t, raw); status != http.StatusPaymentRequired || code != apierror.InsufficientBalance {
		t.Fatalf("with an image: %d %s", status, raw)
	}
	g.checkMoney(t, pid)
}

// A non-streamed answer whose reported usage (2000 tokens, 2.0) is far above its hold (20
// tokens) is delivered and charged in full where the balance pays; where it cannot (0.5),
// nothing of it is delivered, over HTTP (the envelope) or to a gRPC caller (the call's error,
// no event), and nothing is charged.
func TestNonStreamedAnswersAreNotDeliveredUnpaid(t *testing.T) {
	t.Parallel()
	g := startHolds(t)
	body := `{"model":"h-openai","max_tokens":20,"messages":[{"role":"user","content":"#sim:words=2000 go"}]}`
	rich, richID := g.newProfile(t, "ns-rich", "1000")
	status, hdr, raw := g.postAs(t, rich, "/v1/chat/completions", nil, body)
	if status != http.StatusOK || hdr.Get("X-Request-Cost") != "2" || strings.Count(gjson.GetBytes(raw, "choices.0.message.content").String(), " ") < 1990 {
		t.Fatalf("with 1000 on the balance: %d, cost %q: %.200s", status, hdr.Get("X-Request-Cost"), raw)
	}
	g.checkMoney(t, richID)
	poor, poorID := g.newProfile(t, "ns-poor", "0.5")
	status, _, raw = g.postAs(t, poor, "/v1/chat/completions", nil, body)
	if code, _, _ := envelope(t, raw); status != http.StatusPaymentRequired || code != apierror.InsufficientBalance || bytes.Contains(raw, []byte("Simulated")) {
		t.Fatalf("with 0.5 on the balance: %d %s", status, raw)
	}

	conn, err := grpc.NewClient(g.g.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	generate := func(key string) (events []*corev1.GenerateEvent, err error) {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+key)
		max := int64(20)
		stream, err := corev1.NewCoreServiceClient(conn).Generate(ctx, &corev1.GenerateRequest{EndpointFamily: "chat.completions",
			Protocol: corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS, Model: "h-openai", RawBody: []byte(body), MaxOutputTokens: &max})
		if err != nil {
			return nil, err
		}
		for {
			ev, err := stream.Recv()
			if err == io.EOF {
				return events, nil
			}
			if err != nil {
				return events, err
			}
			events = append(events, ev)
		}
	}
	evs, err := generate(rich)
	if err != nil || len(evs) < 3 || evs[len(evs)-1].GetUsage().GetCost() != "2" {
		t.Fatalf("gRPC with 1000 on the balance: %v, %d events", err, len(evs))
	}
	// Nothing was sent before the charge failed: the call's own error, no event at all.
	evs, err = generate(poor)
	if apistatus.FromError(err).Code != apierror.InsufficientBalance || len(evs) != 0 {
		t.Fatalf("gRPC with 0.5 on the balance: %v after %d events: %v", err, len(evs), evs)
	}
	if b := g.checkMoney(t, poorID); !b.Equal(decimal.RequireFromString("0.5")) {
		t.Fatalf("balance %s, want 0.5", b)
	}
}

// A realtime response's deltas count toward its reserve as they pass: a 100000-word answer
// (about 700 KB of text deltas, 100000 output tokens at 400 per 1M: 40, against a reserve of
// 32.77 for 4096 output tokens) is delivered whole and charged where the balance pays (10000: the 700 KB bound is 1120);
// on a balance of 35 the session closes with insufficient_balance before the deltas outrun
// what 35 pays for (the reserve's input side, 32768 tokens at 800 per 1M, and then 1600 per
// 1M for each byte of delta: at most 5491 bytes), with no response.done and nothing charged.
// (Before, all 700 KB went out, then the close: the whole answer free.)
func TestRealtimeDeltasCountTowardTheReserve(t *testing.T) {
	t.Parallel()
	g := startMedia(t)
	run := func(credit string) (text int, done bool, closeErr error, pid string) {
		key, pid := g.newProfile(t, "rt-"+credit, credit)
		c, _, err := g.dialRealtime(t, "rt", http.Header{"Authorization": {"Bearer " + key}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		until(t, c, "session.created")
		ask(t, c, "#sim:words=100000 go on")
		// 100000 deltas take a while on a loaded machine.
		_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
		for {
			_, data, err := c.ReadMessage()
			if err != nil {
				return text, done, err, pid
			}
			switch gjson.GetBytes(data, "type").String() {
			case "response.output_text.delta":
				text += len(gjson.GetBytes(data, "delta").String())
			case "response.done":
				return text, true, nil, pid
			}
		}
	}
	text, done, err, pid := run("10000")
	if !done || err != nil || text < 100000*4 {
		t.Fatalf("with 10000 on the balance: done %v, %v, %d bytes of text", done, err, text)
	}
	if b := g.settled(t, pid, 1); !b.LessThan(decimal.NewFromInt(10000)) {
		t.Fatalf("balance %s after the whole answer: not charged", b)
	}
	g.checkMoney(t, pid)

	text, done, err, pid = run("35")
	var ce *websocket.CloseError
	if done || !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "insufficient_balance") {
		t.Fatalf("with 35 on the balance: done %v, %v after %d bytes", done, err, text)
	}
	if text > 5491 || text == 0 {
		t.Fatalf("with 35 on the balance, %d bytes of text were delivered, want 0 < n <= 5491", text)
	}
	if b := g.checkMoney(t, pid); !b.Equal(decimal.NewFromInt(35)) {
		t.Fatalf("balance %s after the cut response, want 35", b)
	}
	t.Logf("realtime cut after %d bytes of text", text)
}
