package rpc

// The gRPC listener is a way in of its own: its callers build the canonical request
// themselves, raw body and structured fields side by side. Core decides on the structured
// fields (model, output limit, stream, n) and an upstream of the client's protocol reads the
// raw body, so a caller over the socket could hold for one token and ask the upstream for
// 3,000. The HTTP front builds both from one reading; here the raw body is read again, as the
// upstream reads it, and must say what the fields say (contract: one reading of a body).

import (
	"strings"

	"github.com/tidwall/gjson"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/strictjson"
)

// rawFields is where one protocol keeps what core decides on.
type rawFields struct {
	model  bool     // the body names the model (content generation: the path does, optionally the body)
	parent []string // the object that holds limit and n, in either spelling; none: the top level
	limit  []string // the output limit's spellings, the first present read
	stream string   // "" when the path says it
	n      []string
}

var rawFieldsOf = map[corev1.Protocol]rawFields{
	corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS:   {model: true, limit: []string{"max_completion_tokens", "max_tokens"}, stream: "stream", n: []string{"n"}},
	corev1.Protocol_PROTOCOL_COMPLETIONS:        {model: true, limit: []string{"max_tokens"}, stream: "stream", n: []string{"n"}},
	corev1.Protocol_PROTOCOL_RESPONSES:          {model: true, limit: []string{"max_output_tokens"}, stream: "stream"},
	corev1.Protocol_PROTOCOL_RESPONSES_COMPACT:  {model: true, limit: []string{"max_output_tokens"}, stream: "stream"},
	corev1.Protocol_PROTOCOL_MESSAGES:           {model: true, limit: []string{"max_tokens"}, stream: "stream"},
	corev1.Protocol_PROTOCOL_CONTENT_GENERATION: {parent: []string{"generationConfig", "generation_config"}, limit: []string{"maxOutputTokens", "max_output_tokens"}, n: []string{"candidateCount", "candidate_count"}},
	corev1.Protocol_PROTOCOL_EMBEDDINGS:         {model: true},
}

// checkRaw refuses a generation request whose raw body an upstream would read otherwise than
// its fields say. limited: the request carries the output limit (a count request has none
// to compare).
func checkRaw(req *corev1.GenerateRequest, limited bool) *apierror.Error {
	raw := req.GetRawBody()
	if len(raw) == 0 {
		return nil
	}
	if err := strictjson.Check(raw); err != nil {
		return apierror.New(apierror.InvalidRequest, "raw_body: %v", err)
	}
	f, ok := rawFieldsOf[req.GetProtocol()]
	if !ok {
		return apierror.New(apierror.InvalidRequest, "raw_body is not accepted with the protocol %s", req.GetProtocol())
	}
	body := gjson.ParseBytes(raw)
	if !body.IsObject() {
		return disagree("the body is not an object")
	}
	// A stored conversation is expanded by the HTTP front (front/responses); over the socket
	// the id would reach a responses upstream, which never saw it, and any other upstream
	// would answer without the conversation.
	if p := req.GetProtocol(); (p == corev1.Protocol_PROTOCOL_RESPONSES || p == corev1.Protocol_PROTOCOL_RESPONSES_COMPACT) &&
		body.Get("previous_response_id").Type == gjson.String {
		return apierror.New(apierror.InvalidRequest, "previous_response_id is served on the HTTP route only; over gRPC send the conversation's items as input")
	}
	if m := body.Get("model"); f.model && (m.Type != gjson.String || m.Str != req.GetModel()) ||
		!f.model && m.Exists() && strings.TrimPrefix(m.String(), "models/") != req.GetModel() {
		return disagree("model")
	}
	if f.stream != "" && (body.Get(f.stream).Type == gjson.True) != req.GetStream() {
		return disagree(f.stream)
	}
	holder := body
	if len(f.parent) > 0 {
		holder = first(body, f.parent)
	}
	if limited && len(f.limit) > 0 && !sameInt(first(holder, f.limit), req.MaxOutputTokens) {
		return disagree(f.limit[0])
	}
	if len(f.n) > 0 {
		var n *int64
		if req.N != nil {
			n = new(int64(req.GetN()))
		}
		if !sameInt(first(holder, f.n), n) {
			return disagree(f.n[0])
		}
	}
	return nil
}

// checkRawEmbed is checkRaw for an embedding request: the model.
func checkRawEmbed(req *corev1.EmbedRequest) *apierror.Error {
	return checkRaw(&corev1.GenerateRequest{Protocol: req.GetProtocol(), Model: req.GetModel(), RawBody: req.GetRawBody()}, false)
}

// checkRawForward is checkRaw for a JSON media body: its model and stream flag.
func checkRawForward(head *corev1.ForwardHead) *apierror.Error {
	if head.GetMultipart() || len(head.GetBody()) == 0 {
		return nil
	}
	if err := strictjson.Check(head.GetBody()); err != nil {
		return apierror.New(apierror.InvalidRequest, "body: %v", err)
	}
	body := gjson.ParseBytes(head.GetBody())
	if m := body.Get("model"); m.Exists() && m.String() != head.GetModel() {
		return disagree("model")
	}
	if (body.Get("stream").Type == gjson.True) != head.GetStream() && head.GetEndpointFamily() != "audio.speech" {
		return disagree("stream")
	}
	return nil
}

// first is the first of the names present and not null.
func first(obj gjson.Result, names []string) gjson.Result {
	for _, n := range names {
		if v := obj.Get(gjson.Escape(n)); v.Exists() && v.Type != gjson.Null {
			return v
		}
	}
	return gjson.Result{}
}

// sameInt: v is absent and want nil, or v is the integer *want.
func sameInt(v gjson.Result, want *int64) bool {
	if !v.Exists() {
		return want == nil
	}
	var got int64
	if v.Type != gjson.Number || strictjson.Unmarshal([]byte(v.Raw), &got) != nil {
		return false
	}
	return want != nil && got == *want
}

func disagree(what string) *apierror.Error {
	return apierror.New(apierror.InvalidRequest, "raw_body and the request's fields disagree on %s; send them from one reading of the body", what)
}

// checkExternal applies the raw-body checks to a request message from the socket.
func checkExternal(m any) *apierror.Error {
	switch req := m.(type) {
	case *corev1.GenerateRequest:
		return checkRaw(req, true)
	case *corev1.CountTokensRequest:
		return checkRaw(req.GetRequest(), false)
	case *corev1.EmbedRequest:
		return checkRawEmbed(req)
	case *corev1.ForwardRequest:
		return checkRawForward(req.GetHead())
	}
	return nil
}

// RecvMsg reads a message of a streaming call from the socket and checks it (checkExternal).
func (s *externalStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if e := checkExternal(m); e != nil {
		return e
	}
	return nil
}
