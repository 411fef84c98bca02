package embeddings

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
)

// renderList builds the embeddings list from translated vectors, in input order, with the
// public model.
func renderList(resp *corev1.EmbedResponse, model string, b64 bool) ([]byte, *apierror.Error) {
	name, err := json.Marshal(model)
	if err != nil {
		return nil, apierror.New(apierror.Internal, "encoding the model name: %v", err)
	}
	embs := resp.GetEmbeddings()
	size := 128
	for _, e := range embs {
		size += 64 + 16*len(e.GetValues())
	}
	out := make([]byte, 0, size)
	out = append(out, `{"object":"list","data":[`...)
	for i, e := range embs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"object":"embedding","index":`...)
		out = strconv.AppendInt(out, int64(i), 10)
		out = append(out, `,"embedding":`...)
		if b64 {
			out = appendBase64(out, e.GetValues())
		} else if out, err = AppendFloats(out, e.GetValues()); err != nil {
			return nil, apierror.New(apierror.UpstreamError, "embedding %d: %v", i, err)
		}
		out = append(out, '}')
	}
	out = append(out, `],"model":`...)
	out = append(out, name...)
	u := resp.GetUsage()
	n := u.GetInputTokens() + u.GetCachedInputTokens() + u.GetCacheWriteTokens()
	out = append(out, `,"usage":{"prompt_tokens":`...)
	out = strconv.AppendInt(out, n, 10)
	out = append(out, `,"total_tokens":`...)
	out = strconv.AppendInt(out, n, 10)
	return append(out, "}}\n"...), nil
}

// AppendFloats appends v as a JSON array of the shortest spellings that read back as the
// same float32 values; NaN and infinities, which JSON cannot carry, are an error.
func AppendFloats(dst []byte, v []float32) ([]byte, error) {
	dst = append(dst, '[')
	for i, f := range v {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, fmt.Errorf("the vector holds %v, which JSON cannot carry", f)
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendFloat(dst, float64(f), 'g', -1, 32)
	}
	return append(dst, ']'), nil
}

// appendBase64 appends v as the API's base64 string: the float32 values little-endian, four
// bytes each. Every value survives bit for bit, NaN included.
func appendBase64(dst []byte, v []float32) []byte {
	raw := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(f))
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, raw)
	return append(dst, '"')
}
