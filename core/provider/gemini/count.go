package gemini

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/provider"
	"modelgateway/core/wire/geminiwire"
)

// maxCountAnswer bounds a countTokens answer.
const maxCountAnswer = 1 << 20

// countTokens asks :countTokens. A client of this protocol is passed through; any other's
// request is translated, in the generateContentRequest form when it has a system prompt or
// tools (the contents form cannot carry them).
func countTokens(ctx context.Context, call *provider.Call) (int64, error) {
	var body []byte
	var err error
	if call.Request.GetProtocol() == corev1.Protocol_PROTOCOL_CONTENT_GENERATION {
		body, err = countPassthroughBody(call.Request.GetRawBody(), call.UpstreamModel)
	} else {
		body, err = countTranslatedBody(call)
	}
	if err != nil {
		return 0, err
	}
	resp, err := send(ctx, call, actionCount, body)
	if err != nil {
		return 0, err
	}
	raw, err := provider.ReadAll(resp.Body, maxCountAnswer)
	if err != nil {
		return 0, err
	}
	total := gjson.GetBytes(raw, "totalTokens")
	if !total.Exists() {
		if err := chunkError(raw); err != nil {
			return 0, err
		}
		// proto JSON omits zero values: an empty prompt counts as {}.
		if !bytes.Equal(bytes.TrimSpace(raw), []byte("{}")) {
			return 0, &provider.Error{Message: "the upstream count has no totalTokens"}
		}
	}
	return total.Int(), nil
}

// countPassthroughBody removes the top-level model and names the upstream model inside a
// generateContentRequest, where the upstream requires it.
func countPassthroughBody(raw []byte, upstream string) ([]byte, error) {
	body, err := withoutModel(raw)
	if err != nil {
		return nil, err
	}
	for _, key := range []string{"generateContentRequest", "generate_content_request"} {
		if gjson.GetBytes(body, key).IsObject() {
			if body, err = sjson.SetBytes(body, key+".model", "models/"+bareModel(upstream)); err != nil {
				return nil, &provider.Error{Message: "rewriting the count request failed", Err: err}
			}
		}
	}
	return body, nil
}

func countTranslatedBody(call *provider.Call) ([]byte, error) {
	g, err := toRequest(call.Request)
	if err != nil {
		return nil, err
	}
	c := geminiwire.CountTokensRequest{Contents: g.Contents}
	if g.SystemInstruction != nil || len(g.Tools) > 0 {
		c = geminiwire.CountTokensRequest{GenerateContentRequest: &geminiwire.GenerateContentRequest{
			Model: "models/" + bareModel(call.UpstreamModel), Contents: g.Contents,
			SystemInstruction: g.SystemInstruction, Tools: g.Tools,
		}}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, &provider.Error{Message: "encoding the count request failed", Err: err}
	}
	return b, nil
}
