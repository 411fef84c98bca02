package anthropic

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	corev1 "modelgateway/gen/gateway/core/v1"

	mw "modelgateway/core/wire/messageswire"
)

// requestOf builds a request of the encoder's shape (or just outside it) from a few values.
func requestOf(model, text, system, stop, user string, temp, topP float64, topK int64, flags uint8) *mw.Request {
	maxTokens, stream := int64(len(text)+1), flags&1 != 0
	w := &mw.Request{Model: model, MaxTokens: &maxTokens, Messages: []mw.MessageParam{
		{Role: mw.RoleUser, Content: mw.Content{{Type: mw.BlockText, Text: text}}},
		{Role: mw.RoleAssistant, Content: mw.Content{{Type: mw.BlockText, Text: system}, {Type: mw.BlockText, Text: ""}}},
	}}
	if flags&2 != 0 {
		w.System = mw.Content{{Type: mw.BlockText, Text: system}}
	}
	if flags&4 != 0 {
		w.StopSequences = []string{stop, text}
	}
	if flags&8 != 0 {
		w.Temperature, w.TopP, w.TopK = &temp, &topP, &topK
	}
	if flags&16 != 0 {
		w.Stream = &stream
	}
	if flags&32 != 0 {
		w.Metadata = &mw.Metadata{UserID: user}
	}
	if flags&64 != 0 { // outside the shape: json.Marshal writes it
		w.Messages[1].Content = append(w.Messages[1].Content, mw.ContentBlock{Type: mw.BlockToolUse, ID: "t", Name: text})
	}
	if flags&128 != 0 {
		w.Messages = append(w.Messages, mw.MessageParam{Role: mw.RoleUser})
	}
	return w
}

// encodeRequest writes what json.Marshal writes, whichever way it takes; the usual chat
// request takes its own.
func TestEncodeRequestIsJSONMarshal(t *testing.T) {
	t.Parallel()
	for i, w := range []*mw.Request{
		requestOf("claude-x", "hello", "be brief", "\n\nHuman:", "u1", 0.7, 1, 40, 0xff&^64),
		requestOf("m", "é 日本 😀 \u2028 \x01 \"q\" \\", "", "", "", 0, -0.5, -1, 0x3f),
		requestOf("m", "<b>&", "s", "x", "<u>", 1e-7, 1e21, 0, 0x3f), // HTML escaping, exponents: json.Marshal's
		requestOf("m", "bad \xff utf8", "s", "x", "", math.Inf(1), 0.1, 0, 0x3f),
		requestOf("m", "t", "s", "x", "", 0.1, 0.2, 3, 0xff), // a tool call block
		{Model: "m"},
	} {
		if _, ok := appendRequest(nil, w); i < 2 && !ok {
			t.Errorf("%+v: not written by appendRequest", w)
		}
		want, wantErr := json.Marshal(w)
		got, err := encodeRequest(w)
		if string(got) != string(want) || (err == nil) != (wantErr == nil) {
			t.Errorf("encodeRequest:\n got %s %v\nwant %s %v", got, err, want, wantErr)
		}
	}
	call := newCall("http://x", &corev1.GenerateRequest{Stream: true, User: "u", Stop: []string{"END"},
		Messages: []*corev1.Message{{Role: corev1.Role_ROLE_USER, Parts: []*corev1.Part{{Kind: &corev1.Part_Text{Text: "hello #sim:input=20000"}}}}}})
	w, err := buildRequest(call)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := appendRequest(nil, w); !ok {
		t.Fatal("a text chat request is not written by appendRequest")
	}
}

// The encoder knows every field of the request: a field added to mw.Request must be added
// to appendRequest (or make it refuse), or it would be dropped from the upstream request.
func TestEncodeRequestKnowsEveryField(t *testing.T) {
	t.Parallel()
	known := []string{"Model", "MaxTokens", "Messages", "System", "StopSequences", "Temperature", "TopP", "TopK",
		"Stream", "Tools", "ToolChoice", "Thinking", "Metadata", "OutputConfig", "ServiceTier", "CacheControl"}
	var fields []string
	for f := range reflect.TypeFor[mw.Request]().Fields() {
		fields = append(fields, f.Name)
	}
	mp := reflect.TypeFor[mw.MessageParam]()
	md := reflect.TypeFor[mw.Metadata]()
	if !reflect.DeepEqual(fields, known) || mp.NumField() != 2 || md.NumField() != 1 {
		t.Fatalf("mw.Request has fields %v (MessageParam %d, Metadata %d); appendRequest knows %v", fields, mp.NumField(), md.NumField(), known)
	}
}

func FuzzEncodeRequest(f *testing.F) {
	f.Add("claude-x", "hello", "be brief", "\n\nHuman:", "u1", 0.7, 1.0, int64(40), uint8(0x3f))
	f.Add("m", "<b>&\u2028", "", "", "", 1e-7, 1e21, int64(-1), uint8(0xff))
	f.Fuzz(func(t *testing.T, model, text, system, stop, user string, temp, topP float64, topK int64, flags uint8) {
		w := requestOf(model, text, system, stop, user, temp, topP, topK, flags)
		want, wantErr := json.Marshal(w)
		got, err := encodeRequest(w)
		if string(got) != string(want) || (err == nil) != (wantErr == nil) {
			t.Fatalf("encodeRequest:\n got %s %v\nwant %s %v", got, err, want, wantErr)
		}
	})
}

// The bench's translated request, built and encoded as translated does.
func BenchmarkEncodeRequest(b *testing.B) {
	call := newCall("http://x", &corev1.GenerateRequest{Stream: true,
		Messages: []*corev1.Message{{Role: corev1.Role_ROLE_USER, Parts: []*corev1.Part{{Kind: &corev1.Part_Text{Text: "hello #sim:input=20000"}}}}}})
	b.ReportAllocs()
	for b.Loop() {
		w, err := buildRequest(call)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := encodeRequest(w); err != nil {
			b.Fatal(err)
		}
	}
}
