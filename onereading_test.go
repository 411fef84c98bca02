package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apistatus"
)

// Issue 30, one reading of a body: the simulator reads bodies as providers do (exact names,
// the last of two equal names wins). A case variant of the output limit no longer sizes the
// hold: the hold is what the upstream will be asked for, so a balance that covers one token
// but not 3,000 is refused before anything reaches the upstream; the same body from a
// profile that can pay is served with max_tokens 3000 upstream.
func TestACaseVariantDoesNotSizeTheHold(t *testing.T) {
	t.Parallel()
	g := startGen(t)
	before := len(g.up.Calls())
	for i, body := range []string{
		// m-money: output at 1000 per 1M tokens; a 1-token hold is 0.001, 3,000 tokens 3.
		`{"model":"m-money","MAX_TOKENS":1,"max_tokens":3000,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m-money","max_tokens":3000,"Max_Completion_Tokens":1,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m-money","Max_Tokens":1,"messages":[{"role":"user","content":"hi"}]}`, // no limit upstream: the default is held
	} {
		// The positive case: a profile that can pay is served, and the upstream got the
		// limit the gateway held for (or none).
		rich, richPID := g.newProfile(t, fmt.Sprintf("rich-%d", i), "10")
		status, _, raw := g.postAs(t, rich, "/v1/chat/completions", nil, body)
		if status != 200 {
			t.Fatalf("%s from a profile that can pay: %d %s", body, status, raw)
		}
		calls := g.up.Calls()
		sent := calls[len(calls)-1].Body
		if got := gjson.GetBytes(sent, "max_tokens"); strings.Contains(body, `"max_tokens":3000`) && got.Int() != 3000 {
			t.Fatalf("%s: the upstream got max_tokens %s", body, got.Raw)
		}
		g.checkMoney(t, richPID)

		poor, poorPID := g.newProfile(t, fmt.Sprintf("poor-%d", i), "1")
		n := len(g.up.Calls())
		status, _, raw = g.postAs(t, poor, "/v1/chat/completions", nil, body)
		if code, _, _ := envelope(t, raw); status != http.StatusPaymentRequired || code != "insufficient_balance" {
			t.Fatalf("%s from a profile that can pay one token: %d %s, want 402 insufficient_balance", body, status, raw)
		}
		if got := len(g.up.Calls()); got != n {
			t.Fatalf("%s: a refused request reached the upstream", body)
		}
		if b := g.checkMoney(t, poorPID); !b.Equal(decimal.NewFromInt(1)) {
			t.Fatalf("%s: balance %s after a refusal", body, b)
		}
	}
	if len(g.up.Calls()) == before {
		t.Fatal("nothing reached the upstream")
	}
}

// A body with a member name twice, in any object, on any JSON route, is 400
// invalid_request_error with the request id echoed; nothing reaches the upstream and no money
// moves. Each route first serves the same body without the duplicate.
func TestADuplicateMemberIsRefusedOnEveryRoute(t *testing.T) {
	t.Parallel()
	g := startGen(t)
	key, pid := g.newProfile(t, "dups", "100")
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	cases := []struct {
		name, path, good, dup string
	}{
		{"chat stream_options twice", "/v1/chat/completions",
			`{"model":"m-openai","stream":true,"stream_options":{"include_usage":true},` + msgs + `}`,
			`{"model":"m-openai","stream":true,"stream_options":{"include_usage":true},"stream_options":{"include_usage":false},` + msgs + `}`},
		{"chat model twice, escaped", "/v1/chat/completions",
			`{"model":"m-openai",` + msgs + `}`,
			`{"model":"m-openai","mod\u0065l":"m-anthropic",` + msgs + `}`},
		{"chat a message's content twice", "/v1/chat/completions",
			`{"model":"m-openai","messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"m-openai","messages":[{"role":"user","content":"hi","content":"again"}]}`},
		{"completions max_tokens twice", "/v1/completions",
			`{"model":"m-openai","prompt":"hi","max_tokens":5}`,
			`{"model":"m-openai","prompt":"hi","max_tokens":5,"max_tokens":3000}`},
		{"responses max_output_tokens twice", "/v1/responses",
			`{"model":"m-openai","input":"hi","max_output_tokens":16}`,
			`{"model":"m-openai","input":"hi","max_output_tokens":16,"max_output_tokens":3000}`},
		{"messages stream twice", "/v1/messages",
			`{"model":"m-anthropic","max_tokens":5,` + msgs + `}`,
			`{"model":"m-anthropic","max_tokens":5,"stream":false,"stream":true,` + msgs + `}`},
		{"messages count_tokens, a nested duplicate", "/v1/messages/count_tokens",
			`{"model":"m-anthropic",` + msgs + `}`,
			`{"model":"m-anthropic","messages":[{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}]}`},
		{"content generation, generationConfig twice", "/v1beta/models/m-gemini:generateContent",
			`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":5}}`,
			`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":5},"generationConfig":{"maxOutputTokens":3000}}`},
	}
	charges := 0
	for i, c := range cases {
		status, _, raw := g.postAs(t, key, c.path, anthropicVersion, c.good)
		if status != 200 {
			t.Fatalf("%s without the duplicate: %d %s", c.name, status, raw)
		}
		if !strings.Contains(c.path, "count_tokens") {
			charges++
			g.settled(t, pid, charges)
		}
		n := len(g.up.Calls())
		bal, _, _ := g.ledgerOf(t, pid)
		id := "dup-" + string(rune('a'+i))
		status, hdr, raw := g.postAs(t, key, c.path, map[string]string{"Anthropic-Version": "2023-06-01", "X-Request-Id": id}, c.dup)
		code, msg, rid := envelope(t, raw)
		if status != 400 || code != "invalid_request_error" || !strings.Contains(msg, "appears twice") {
			t.Errorf("%s: %d %s, want 400 invalid_request_error naming the duplicate", c.name, status, raw)
		}
		if rid != id || hdr.Get("X-Request-Id") != id {
			t.Errorf("%s: request id %q / %q, want %q echoed", c.name, rid, hdr.Get("X-Request-Id"), id)
		}
		if len(g.up.Calls()) != n {
			t.Errorf("%s: the refused body reached the upstream", c.name)
		}
		if b := g.checkMoney(t, pid); !b.Equal(bal) {
			t.Errorf("%s: balance %s, was %s", c.name, b, bal)
		}
	}
}

// The gRPC listener's callers build the canonical request themselves: the raw body (what an
// upstream of the client's protocol reads) must say what the fields core decides on say.
// One raw body asks for 3,000 tokens while the fields hold for one: refused before the
// upstream. The same request with agreeing fields is served and charged.
func TestGRPCRawBodyMustAgreeWithItsFields(t *testing.T) {
	t.Parallel()
	g := startGen(t)
	key, pid := g.newProfile(t, "grpc-raw", "10")
	conn, err := grpc.NewClient(g.g.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := corev1.NewCoreServiceClient(conn)
	gen := func(id string, req *corev1.GenerateRequest) (int, error) {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+key, "x-request-id", id)
		s, err := client.Generate(ctx, req)
		if err != nil {
			return 0, err
		}
		n := 0
		for {
			ev, err := s.Recv()
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			if err != nil {
				return n, err
			}
			if ev.GetError() != nil {
				return n, fmt.Errorf("%s", ev.GetError().GetMessage())
			}
			n++
		}
	}
	chat := func(raw string, limit int64, stream bool) *corev1.GenerateRequest {
		return &corev1.GenerateRequest{EndpointFamily: "chat.completions", Protocol: corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS,
			Model: "m-money", Stream: stream, RawBody: []byte(raw), MaxOutputTokens: &limit,
			Messages: []*corev1.Message{{Role: corev1.Role_ROLE_USER, Parts: []*corev1.Part{{Kind: &corev1.Part_Text{Text: "hi"}}}}}}
	}
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	if n, err := gen("grpc-ok", chat(`{"model":"m-money","max_tokens":12,`+msgs+`}`, 12, false)); err != nil || n == 0 {
		t.Fatalf("agreeing raw body and fields: %d events, %v", n, err)
	}
	g.settled(t, pid, 1)
	before := len(g.up.Calls())
	bal := g.checkMoney(t, pid)
	for i, c := range []struct {
		name   string
		req    *corev1.GenerateRequest
		reason string
	}{
		{"a larger limit in the raw body", chat(`{"model":"m-money","max_tokens":3000,`+msgs+`}`, 1, false), "max_completion_tokens"},
		{"a limit only in the raw body", chat(`{"model":"m-money","max_completion_tokens":3000,`+msgs+`}`, 1, false), "max_completion_tokens"},
		{"another model in the raw body", chat(`{"model":"m-openai","max_tokens":1,`+msgs+`}`, 1, false), "model"},
		{"a stream in the raw body only", chat(`{"model":"m-money","max_tokens":1,"stream":true,`+msgs+`}`, 1, false), "stream"},
		{"n in the raw body only", chat(`{"model":"m-money","max_tokens":1,"n":8,`+msgs+`}`, 1, false), "n"},
		{"a duplicate in the raw body", chat(`{"model":"m-money","max_tokens":1,"max_tokens":3000,`+msgs+`}`, 1, false), "appears twice"},
	} {
		_, err := gen(fmt.Sprintf("grpc-bad-%d", i), c.req)
		if ae := apistatus.FromError(err); ae.Code != "invalid_request_error" || !strings.Contains(ae.Message, c.reason) {
			t.Errorf("%s: %v, want invalid_request_error naming %s", c.name, err, c.reason)
		}
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+key)
	_, err = client.CountTokens(ctx, &corev1.CountTokensRequest{Request: &corev1.GenerateRequest{EndpointFamily: "messages.count_tokens",
		Protocol: corev1.Protocol_PROTOCOL_MESSAGES, Model: "m-anthropic", RawBody: []byte(`{"model":"m-anthropic","model":"m-money",` + msgs + `}`)}})
	if ae := apistatus.FromError(err); ae.Code != "invalid_request_error" {
		t.Errorf("count with a duplicate model: %v", err)
	}
	if len(g.up.Calls()) != before {
		t.Error("a refused request reached the upstream")
	}
	if b := g.checkMoney(t, pid); !b.Equal(bal) {
		t.Errorf("balance %s after refusals, was %s", b, bal)
	}
}
