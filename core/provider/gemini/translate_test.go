package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func txt(s string) *corev1.Part { return &corev1.Part{Kind: &corev1.Part_Text{Text: s}} }

func msg(role corev1.Role, parts ...*corev1.Part) *corev1.Message {
	return &corev1.Message{Role: role, Parts: parts}
}

const (
	userRole  = corev1.Role_ROLE_USER
	assistant = corev1.Role_ROLE_ASSISTANT
)

// fullRequest uses every canonical field a content-generation upstream can take.
func fullRequest() *corev1.GenerateRequest {
	return &corev1.GenerateRequest{
		Protocol: corev1.Protocol_PROTOCOL_MESSAGES, Model: "flash", Stream: true,
		System: "Be brief.\n\nUse metric units.",
		Messages: []*corev1.Message{
			msg(userRole, txt("What is in this picture, and what is the weather?"),
				&corev1.Part{Kind: &corev1.Part_Image{Image: &corev1.Image{DataBase64: "iVBORw0KGgoAAAANSUhEUg=="}}},
				&corev1.Part{Kind: &corev1.Part_Image{Image: &corev1.Image{Url: "data:image/webp;base64,UklGRiQAAABXRUJQ"}}}),
			msg(assistant,
				&corev1.Part{Kind: &corev1.Part_Thinking{Thinking: &corev1.Thinking{Text: "Need the weather.", Signature: "c2lnLXRoaW5r"}}},
				&corev1.Part{Kind: &corev1.Part_Thinking{Thinking: &corev1.Thinking{RedactedData: "opaque"}}},
				txt("A cat. Checking the weather."),
				&corev1.Part{Kind: &corev1.Part_ToolCall{ToolCall: &corev1.ToolCall{Id: "toolu_1", Name: "get_weather", Arguments: `{"city": "Oslo"}`}}},
				&corev1.Part{Kind: &corev1.Part_ToolCall{ToolCall: &corev1.ToolCall{Id: "toolu_2", Name: "get_time", Arguments: ""}}}),
			msg(userRole,
				&corev1.Part{Kind: &corev1.Part_ToolResult{ToolResult: &corev1.ToolResult{CallId: "toolu_1", Content: `{"temp_c": 14}`}}},
				&corev1.Part{Kind: &corev1.Part_ToolResult{ToolResult: &corev1.ToolResult{CallId: "toolu_2", Name: "get_time", Content: "timeout", IsError: true}}}),
			// A second user turn in a row is merged into the previous one.
			msg(userRole, txt("Thanks. And tomorrow?")),
			msg(assistant, &corev1.Part{Kind: &corev1.Part_ToolCall{ToolCall: &corev1.ToolCall{Id: "call_x", Name: "get_weather", Arguments: `{"city":"Oslo","day":"tomorrow"}`, Signature: "c2lnLWNhbGw="}}}),
			msg(userRole, &corev1.Part{Kind: &corev1.Part_ToolResult{ToolResult: &corev1.ToolResult{CallId: "call_x", Content: "Rain, 9C"}}}),
		},
		Tools: []*corev1.Tool{
			{Name: "get_weather", Description: "Weather for a city", Parameters: `{"type":"object","properties":{"city":{"type":"string"},"day":{"type":["string","null"]}},"required":["city"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`},
			{Name: "get_time"},
		},
		ToolChoice:      &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_NAMED, Name: "get_weather"},
		MaxOutputTokens: proto.Int64(32000),
		Temperature:     proto.Float64(0.3),
		TopP:            proto.Float64(0.95),
		TopK:            proto.Int32(40),
		Stop:            []string{"END", "STOP"},
		Seed:            proto.Int64(42),
		N:               proto.Int32(1),
		ResponseFormat:  &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_JSON_SCHEMA, Name: "answer", Schema: `{"type":"object","properties":{"text":{"type":"string"}}}`},
		Reasoning:       &corev1.Reasoning{Effort: "medium", IncludeThoughts: true},
	}
}

func TestRequestTranslationGolden(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		req  *corev1.GenerateRequest
	}{
		{"request_full", fullRequest()},
		{"request_minimal", chatRequest(false)},
		{"request_reasoning_off", &corev1.GenerateRequest{
			Messages:   []*corev1.Message{msg(userRole, txt("Hi"))},
			Reasoning:  &corev1.Reasoning{Disabled: true, IncludeThoughts: true},
			ToolChoice: &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_REQUIRED}, // no tools: dropped
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, err := toRequest(tc.req)
			if err != nil {
				t.Fatalf("toRequest: %v", err)
			}
			b, err := json.MarshalIndent(g, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, '\n')
			golden := filepath.Join("testdata", tc.name+".json")
			if *update {
				if err := os.WriteFile(golden, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(b)); diff != "" {
				t.Errorf("request differs from %s (-want +got):\n%s", golden, diff)
			}
		})
	}
}

func TestRequestsTheUpstreamCannotTake(t *testing.T) {
	t.Parallel()
	withMsgs := func(parts ...*corev1.Part) *corev1.GenerateRequest {
		return &corev1.GenerateRequest{Messages: []*corev1.Message{msg(userRole, parts...)}}
	}
	cases := []struct {
		name, wantMsg string
		req           *corev1.GenerateRequest
	}{
		{"an http image URL is not fetched", "image URLs cannot be sent",
			withMsgs(&corev1.Part{Kind: &corev1.Part_Image{Image: &corev1.Image{Url: "https://example.com/cat.png"}}})},
		{"a non-base64 data URL", "only base64 data: URLs",
			withMsgs(&corev1.Part{Kind: &corev1.Part_Image{Image: &corev1.Image{Url: "data:text/plain,hello"}}})},
		{"more than five stop sequences", "at most 5 stop sequences",
			&corev1.GenerateRequest{Messages: []*corev1.Message{msg(userRole, txt("Hi"))}, Stop: []string{"a", "b", "c", "d", "e", "f"}}},
		{"a tool result whose function is unknown", "names no function",
			withMsgs(&corev1.Part{Kind: &corev1.Part_ToolResult{ToolResult: &corev1.ToolResult{CallId: "nope", Content: "x"}}})},
		{"tool arguments that are not an object", "not a JSON object",
			&corev1.GenerateRequest{Messages: []*corev1.Message{msg(assistant, &corev1.Part{Kind: &corev1.Part_ToolCall{ToolCall: &corev1.ToolCall{Id: "a", Name: "f", Arguments: `[1]`}}})}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := toRequest(tc.req)
			var ae *apierror.Error
			if !errors.As(err, &ae) || ae.Code != apierror.InvalidRequest || !strings.Contains(ae.Message, tc.wantMsg) {
				t.Fatalf("err = %v, want invalid_request_error containing %q", err, tc.wantMsg)
			}
		})
	}
}

func TestCompactNeedsAnOpenAIUpstream(t *testing.T) {
	t.Parallel()
	req := &corev1.GenerateRequest{Protocol: corev1.Protocol_PROTOCOL_RESPONSES_COMPACT, Model: "flash"}
	_, err := Adapter{}.Generate(context.Background(), newCall("http://127.0.0.1:1", req))
	var ae *apierror.Error
	if !errors.As(err, &ae) || ae.Code != apierror.InvalidRequest || !strings.Contains(ae.Message, "OpenAI upstream") {
		t.Fatalf("err = %v, want invalid_request_error naming the OpenAI upstream", err)
	}
}

func TestResponseObject(t *testing.T) {
	t.Parallel()
	cases := []struct {
		content string
		isErr   bool
		want    string
	}{
		{`{"temp": 14}`, false, `{"temp": 14}`},
		{"14C", false, `{"result":"14C"}`},
		{`[1,2]`, false, `{"result":[1,2]}`},
		{"", false, `{"result":""}`},
		{"boom", true, `{"error":"boom"}`},
		{`{"code":1}`, true, `{"error":{"code":1}}`},
	}
	for _, tc := range cases {
		if got := string(responseObject(tc.content, tc.isErr)); !bytes.Equal([]byte(got), []byte(tc.want)) {
			t.Errorf("responseObject(%q, %v) = %s, want %s", tc.content, tc.isErr, got, tc.want)
		}
	}
}
