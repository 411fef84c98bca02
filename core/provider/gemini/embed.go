package gemini

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
	"modelgateway/core/provider"
	"modelgateway/core/wire/geminiwire"
)

var _ provider.Embedder = Adapter{}

const (
	actionEmbed      = "embedContent"
	actionBatchEmbed = "batchEmbedContents"
)

// noEmbedUsage: the embed routes report no token counts, so core counts the input itself.
var noEmbedUsage = metering.Unreliable("the content-generation embed routes report no usage")

// Embed implements provider.Embedder. A content-generation client is passed through to its
// own action; an embeddings client's texts go to :batchEmbedContents, one request per text.
func (Adapter) Embed(ctx context.Context, call *provider.EmbedCall) (*provider.EmbedResult, error) {
	switch {
	case call.Request.GetProtocol() == corev1.Protocol_PROTOCOL_CONTENT_GENERATION:
		return embedPassthrough(ctx, call)
	case call.Request.GetTokenInput():
		return nil, &provider.Error{Status: http.StatusBadRequest,
			Message: "token-id input cannot be translated for a content-generation upstream; send the input as text"}
	}
	return embedTranslated(ctx, call)
}

func embedPassthrough(ctx context.Context, call *provider.EmbedCall) (*provider.EmbedResult, error) {
	action := actionEmbed
	if call.Request.GetBatch() {
		action = actionBatchEmbed
	}
	body, err := upstreamEmbedModels(call.Request.GetRawBody(), "models/"+bareModel(call.UpstreamModel), call.Request.GetBatch())
	if err != nil {
		return nil, err
	}
	answer, err := embedSend(ctx, call, action, body)
	if err != nil {
		return nil, err
	}
	// The answer names no model: it goes to the client as it is.
	return &provider.EmbedResult{NativeBody: answer, Usage: noEmbedUsage}, nil
}

// upstreamEmbedModels points the body's model fields at the upstream model: the API refuses a
// batch whose requests[].model differs from the model in the URL.
func upstreamEmbedModels(body []byte, model string, batch bool) ([]byte, error) {
	var err error
	if gjson.GetBytes(body, "model").Exists() {
		if body, err = sjson.SetBytes(body, "model", model); err != nil {
			return nil, &provider.Error{Message: "the request body is not a JSON object", Err: err}
		}
	}
	if !batch {
		return body, nil
	}
	n := int(gjson.GetBytes(body, "requests.#").Int())
	for i := range n {
		if body, err = sjson.SetBytes(body, "requests."+strconv.Itoa(i)+".model", model); err != nil {
			return nil, &provider.Error{Message: "setting the model of the batch's requests", Err: err}
		}
	}
	return body, nil
}

// embedContentRequest is one request of a batchEmbedContents body.
type embedContentRequest struct {
	Model                string             `json:"model"`
	Content              geminiwire.Content `json:"content"`
	TaskType             string             `json:"taskType,omitempty"`
	Title                string             `json:"title,omitempty"`
	OutputDimensionality *int32             `json:"outputDimensionality,omitempty"`
}

type batchEmbedRequest struct {
	Requests []embedContentRequest `json:"requests"`
}

type batchEmbedAnswer struct {
	Embeddings []struct {
		Values []float32 `json:"values"`
	} `json:"embeddings"`
}

func embedTranslated(ctx context.Context, call *provider.EmbedCall) (*provider.EmbedResult, error) {
	req := call.Request
	model := "models/" + bareModel(call.UpstreamModel)
	batch := batchEmbedRequest{Requests: make([]embedContentRequest, len(req.GetTexts()))}
	for i, text := range req.GetTexts() {
		batch.Requests[i] = embedContentRequest{Model: model, Content: geminiwire.Content{Parts: []geminiwire.Part{geminiwire.TextPart(text)}},
			TaskType: req.GetTaskType(), Title: req.GetTitle(), OutputDimensionality: req.Dimensions}
	}
	body, err := json.Marshal(batch)
	if err != nil {
		return nil, &provider.Error{Message: "encoding the upstream request", Err: err}
	}
	answer, err := embedSend(ctx, call, actionBatchEmbed, body)
	if err != nil {
		return nil, err
	}
	vectors, err := decodeBatchEmbed(answer, len(batch.Requests))
	if err != nil {
		return nil, err
	}
	return &provider.EmbedResult{Vectors: vectors, Usage: noEmbedUsage}, nil
}

// embedSend posts body to an embed action and reads the whole answer.
func embedSend(ctx context.Context, call *provider.EmbedCall, action string, body []byte) ([]byte, error) {
	// send needs only the upstream's address, model, credential and timeouts.
	resp, err := send(ctx, &provider.Call{Upstream: call.Upstream}, action, body)
	if err != nil {
		return nil, err
	}
	answer, err := provider.ReadAll(resp.Body, provider.MaxAnswer)
	if err != nil {
		return nil, err
	}
	if err := chunkError(answer); err != nil {
		return nil, err
	}
	return answer, nil
}

// decodeBatchEmbed reads one vector per request, in request order.
func decodeBatchEmbed(answer []byte, n int) ([][]float32, error) {
	var a batchEmbedAnswer
	if err := json.Unmarshal(answer, &a); err != nil {
		return nil, &provider.Error{Message: "the upstream's embeddings answer is not decodable", Err: err}
	}
	if len(a.Embeddings) != n {
		return nil, &provider.Error{Message: fmt.Sprintf("the upstream answered %d embeddings for %d inputs", len(a.Embeddings), n)}
	}
	out := make([][]float32, n)
	for i, e := range a.Embeddings {
		if len(e.Values) == 0 {
			return nil, &provider.Error{Message: fmt.Sprintf("the upstream's embedding %d is empty", i)}
		}
		out[i] = e.Values
	}
	return out, nil
}
