package openai

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"

	"github.com/tidwall/gjson"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
	"modelgateway/core/provider"
)

var _ provider.Embedder = Adapter{}

// routeEmbeddings is the embeddings route below the base URL.
const routeEmbeddings = "/embeddings"

// Embed implements provider.Embedder. An embeddings client is passed through; a
// content-generation client's texts are sent as an embeddings request and the vectors decoded.
func (Adapter) Embed(ctx context.Context, call *provider.EmbedCall) (*provider.EmbedResult, error) {
	switch {
	case call.Request.GetProtocol() == corev1.Protocol_PROTOCOL_EMBEDDINGS:
		return embedPassthrough(ctx, call)
	case call.Request.GetTokenInput():
		return nil, &provider.Error{Status: http.StatusBadRequest, Message: "token-id input can only be passed through to an embeddings upstream"}
	}
	return embedTranslated(ctx, call)
}

// embedPassthrough sends the client's body with only the model replaced and returns the
// answer with the public model.
func embedPassthrough(ctx context.Context, call *provider.EmbedCall) (*provider.EmbedResult, error) {
	body, err := provider.SetModel(call.Request.GetRawBody(), call.UpstreamModel)
	if err != nil {
		return nil, err
	}
	answer, err := embedPost(ctx, call, body)
	if err != nil {
		return nil, err
	}
	native := provider.PublicAnswerModel(answer, call.UpstreamModel, call.PublicModel)
	return &provider.EmbedResult{NativeBody: native, Usage: embedUsage(answer)}, nil
}

// embeddingsRequest is the translated request. base64 halves the answer and keeps every
// float32 bit exact.
type embeddingsRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	Dimensions     *int32   `json:"dimensions,omitempty"`
	EncodingFormat string   `json:"encoding_format"`
}

type embeddingsAnswer struct {
	Data []struct {
		Index     *int            `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
}

func embedTranslated(ctx context.Context, call *provider.EmbedCall) (*provider.EmbedResult, error) {
	texts := call.Request.GetTexts()
	body, err := json.Marshal(embeddingsRequest{Model: call.UpstreamModel, Input: texts,
		Dimensions: call.Request.Dimensions, EncodingFormat: "base64"})
	if err != nil {
		return nil, &provider.Error{Message: "encoding the upstream request", Err: err}
	}
	answer, err := embedPost(ctx, call, body)
	if err != nil {
		return nil, err
	}
	vectors, err := decodeEmbeddings(answer, len(texts))
	if err != nil {
		return nil, err
	}
	return &provider.EmbedResult{Vectors: vectors, Usage: embedUsage(answer)}, nil
}

// embedPost sends body to the embeddings route and reads the whole answer.
func embedPost(ctx context.Context, call *provider.EmbedCall, body []byte) ([]byte, error) {
	// post needs only the upstream's address, credential and timeouts.
	resp, err := post(ctx, &provider.Call{Upstream: call.Upstream}, routeEmbeddings, body, false)
	if err != nil {
		return nil, err
	}
	return provider.ReadAll(resp.Body, provider.MaxAnswer)
}

// decodeEmbeddings puts the answer's vectors in input order by their index. Each is base64
// of little-endian float32s, or a float array from an upstream that ignored encoding_format.
func decodeEmbeddings(answer []byte, n int) ([][]float32, error) {
	var a embeddingsAnswer
	if err := json.Unmarshal(answer, &a); err != nil {
		return nil, &provider.Error{Message: "the upstream's embeddings answer is not decodable", Err: err}
	}
	if len(a.Data) != n {
		return nil, &provider.Error{Message: fmt.Sprintf("the upstream answered %d embeddings for %d inputs", len(a.Data), n)}
	}
	out := make([][]float32, n)
	for i, d := range a.Data {
		idx := i
		if d.Index != nil {
			idx = *d.Index
		}
		if idx < 0 || idx >= n || out[idx] != nil {
			return nil, &provider.Error{Message: fmt.Sprintf("the upstream's embedding %d has index %d, which is out of range or repeated", i, idx)}
		}
		v, err := decodeVector(d.Embedding)
		if err != nil {
			return nil, &provider.Error{Message: fmt.Sprintf("the upstream's embedding %d is not decodable", i), Err: err}
		}
		out[idx] = v
	}
	return out, nil
}

func decodeVector(raw json.RawMessage) ([]float32, error) {
	var v []float32
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, err
		}
		if len(b)%4 != 0 {
			return nil, fmt.Errorf("%d bytes are not a whole number of float32 values", len(b))
		}
		v = make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	} else if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	if len(v) == 0 {
		return nil, fmt.Errorf("the vector is empty")
	}
	for _, f := range v {
		// JSON cannot carry these, and no embedding model produces them.
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, fmt.Errorf("the vector holds %v", f)
		}
	}
	return v, nil
}

// embedUsage reads usage.prompt_tokens, the only count an embeddings answer has.
func embedUsage(answer []byte) metering.Usage {
	p := gjson.GetBytes(answer, "usage.prompt_tokens")
	switch {
	case !p.Exists() || p.Type == gjson.Null:
		return metering.Unreliable("no usage reported")
	case p.Type != gjson.Number || p.Num < 0 || p.Num != math.Trunc(p.Num):
		return metering.Unreliable("usage not decodable: " + p.Raw + " is not a token count")
	}
	return metering.Usage{Input: int64(p.Num), Reliable: true}
}
