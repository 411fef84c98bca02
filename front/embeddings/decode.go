package embeddings

import (
	"encoding/json"
	"math"
	"strconv"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/strictjson"
)

// maxInputs is the most array items one request may embed (the OpenAI API's limit).
const maxInputs = 2048

// request is the part of the body the gateway reads; the rest travels in raw_body.
type request struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat *string         `json:"encoding_format"`
	Dimensions     *int64          `json:"dimensions"`
	User           *string         `json:"user"`
	Stream         *bool           `json:"stream"`
}

// decoded is the canonical request and how the client wants its vectors.
type decoded struct {
	req    *corev1.EmbedRequest
	base64 bool
}

func decode(body []byte) (*decoded, *apierror.Error) {
	var in request
	if err := strictjson.Unmarshal(body, &in); err != nil {
		return nil, invalid("the body is not a valid embeddings request: %v", err)
	}
	if in.Model == "" {
		return nil, invalid("model is required")
	}
	texts, tokens, apiErr := decodeInput(in.Input)
	if apiErr != nil {
		return nil, apiErr
	}
	out := &decoded{req: &corev1.EmbedRequest{
		EndpointFamily: Family,
		Protocol:       corev1.Protocol_PROTOCOL_EMBEDDINGS,
		Model:          in.Model,
		RawBody:        body,
		Texts:          texts,
		TokenInput:     tokens,
		Stream:         in.Stream != nil && *in.Stream,
	}}
	if f := in.EncodingFormat; f != nil {
		switch *f {
		case "float":
		case "base64":
			out.base64 = true
		default:
			return nil, invalid(`encoding_format must be "float" or "base64", not %q`, *f)
		}
	}
	if d := in.Dimensions; d != nil {
		if *d < 1 || *d > math.MaxInt32 {
			return nil, invalid("dimensions must be a positive integer")
		}
		n := int32(*d)
		out.req.Dimensions = &n
	}
	if in.User != nil {
		out.req.Parameters = append(out.req.Parameters, "user")
	}
	return out, nil
}

// decodeInput reads the four shapes of input: a string, strings, token ids, arrays of token
// ids. Token ids have no text: only an upstream of this protocol can take them.
func decodeInput(raw json.RawMessage) (texts []string, tokens bool, _ *apierror.Error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, invalid("input is required")
	}
	switch raw[0] {
	case '"':
		var s string
		if err := strictjson.Unmarshal(raw, &s); err != nil {
			return nil, false, invalid("input: %v", err)
		}
		if s == "" {
			return nil, false, invalid("input must not be an empty string")
		}
		return []string{s}, false, nil
	case '[':
	default:
		return nil, false, badShape()
	}
	var items []json.RawMessage
	if err := strictjson.Unmarshal(raw, &items); err != nil {
		return nil, false, invalid("input: %v", err)
	}
	switch {
	case len(items) == 0:
		return nil, false, invalid("input must not be an empty array")
	case len(items) > maxInputs:
		return nil, false, invalid("input must not hold more than %d items, it holds %d", maxInputs, len(items))
	}
	switch items[0][0] {
	case '"':
		texts = make([]string, len(items))
		for i, item := range items {
			if item[0] != '"' || strictjson.Unmarshal(item, &texts[i]) != nil {
				return nil, false, badShape()
			}
			if texts[i] == "" {
				return nil, false, invalid("input[%d] must not be an empty string", i)
			}
		}
		return texts, false, nil
	case '[':
		for i, item := range items {
			var ids []json.RawMessage
			if item[0] != '[' || strictjson.Unmarshal(item, &ids) != nil || !tokenIDs(ids) {
				return nil, false, badShape()
			}
			if len(ids) == 0 {
				return nil, false, invalid("input[%d] must not be an empty array", i)
			}
		}
		return nil, true, nil
	}
	if !tokenIDs(items) {
		return nil, false, badShape()
	}
	return nil, true, nil
}

// tokenIDs reports whether every item is a token id. Each is parsed on its own: decoding
// into []uint32 would take null for 0.
func tokenIDs(items []json.RawMessage) bool {
	for _, item := range items {
		if _, err := strconv.ParseUint(string(item), 10, 32); err != nil {
			return false
		}
	}
	return true
}

func badShape() *apierror.Error {
	return invalid("input must be a string, an array of strings, an array of token ids (non-negative integers) or an array of token-id arrays")
}

func invalid(format string, args ...any) *apierror.Error {
	return apierror.New(apierror.InvalidRequest, format, args...)
}
