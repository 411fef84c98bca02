package simulator

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
)

// POST /v1/embeddings (OpenAI), :embedContent and :batchEmbedContents (Gemini).

// defaultDims is the length of a simulated embedding unless the request asks for another.
const defaultDims = 8

// vector is a deterministic unit vector derived from text: the same text always embeds the
// same, different texts almost surely differ.
func vector(text string, dims int) []float32 {
	if dims <= 0 || dims > 4096 {
		dims = defaultDims
	}
	v := make([]float32, dims)
	var norm float64
	for i := range v {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d\x00%s", i, text)
		f := float64(h.Sum64()%20001)/10000 - 1 // [-1, 1]
		v[i] = float32(f)
		norm += f * f
	}
	if norm == 0 {
		v[0], norm = 1, 1
	}
	for i := range v {
		v[i] = float32(float64(v[i]) / math.Sqrt(norm))
	}
	return v
}

type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     int             `json:"dimensions"`
}

// inputs returns the texts to embed and their token count; token-id inputs are embedded by
// their decimal spelling and count one token per id.
func (q *embeddingsRequest) inputs() ([]string, int) {
	var one string
	var many []string
	var ids []int
	var batches [][]int
	count := func(texts []string) ([]string, int) {
		n := 0
		for _, t := range texts {
			n += max(1, (len(t)+3)/4)
		}
		return texts, n
	}
	spell := func(ids []int) string { return strings.Trim(fmt.Sprint(ids), "[]") }
	switch {
	case json.Unmarshal(q.Input, &one) == nil:
		return count([]string{one})
	case json.Unmarshal(q.Input, &many) == nil:
		return count(many)
	case json.Unmarshal(q.Input, &ids) == nil:
		return []string{spell(ids)}, len(ids)
	case json.Unmarshal(q.Input, &batches) == nil:
		texts, n := make([]string, len(batches)), 0
		for i, b := range batches {
			texts[i], n = spell(b), n+len(b)
		}
		return texts, n
	}
	return nil, 0
}

type embeddingData struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or a base64 string of float32 LE
}

func serveEmbeddings(x *exchange) {
	var q embeddingsRequest
	if !x.decode(&q) {
		return
	}
	texts, tokens := q.inputs()
	a := plan(&convo{lastUser: strings.Join(texts, "\n"), textBytes: 4 * tokens}, 1)
	if !x.begin(a) {
		return
	}
	data := make([]embeddingData, len(texts))
	for i, t := range texts {
		v := vector(t, q.Dimensions)
		data[i] = embeddingData{Object: "embedding", Index: i, Embedding: v}
		if q.EncodingFormat == "base64" {
			buf := make([]byte, 4*len(v))
			for j, f := range v {
				binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(f))
			}
			data[i].Embedding = base64.StdEncoding.EncodeToString(buf)
		}
	}
	x.writeJSON(a, 1, struct {
		Object string          `json:"object"`
		Data   []embeddingData `json:"data"`
		Model  string          `json:"model"`
		Usage  struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}{Object: "list", Data: data, Model: q.Model, Usage: struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	}{tokens, tokens}})
}

type embedContentRequest struct {
	Content                   geminiContent `json:"content"`
	OutputDimensionality      int           `json:"outputDimensionality"`
	OutputDimensionalitySnake int           `json:"output_dimensionality"`
}

func (q *embedContentRequest) text() string {
	var b strings.Builder
	for _, p := range q.Content.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func (q *embedContentRequest) dims() int {
	return max(q.OutputDimensionality, q.OutputDimensionalitySnake)
}

type geminiEmbedding struct {
	Values []float32 `json:"values"`
}

func serveEmbedContent(x *exchange) {
	var q embedContentRequest
	if !x.decode(&q) {
		return
	}
	a := plan(&convo{lastUser: q.text(), textBytes: len(q.text())}, 1)
	if !x.begin(a) {
		return
	}
	x.writeJSON(a, 1, struct {
		Embedding geminiEmbedding `json:"embedding"`
	}{geminiEmbedding{vector(q.text(), q.dims())}})
}

func serveBatchEmbed(x *exchange) {
	var q struct {
		Requests []embedContentRequest `json:"requests"`
	}
	if !x.decode(&q) {
		return
	}
	texts := make([]string, len(q.Requests))
	for i := range q.Requests {
		texts[i] = q.Requests[i].text()
	}
	all := strings.Join(texts, "\n")
	a := plan(&convo{lastUser: all, textBytes: len(all)}, 1)
	if !x.begin(a) {
		return
	}
	out := make([]geminiEmbedding, len(q.Requests))
	for i := range q.Requests {
		out[i] = geminiEmbedding{vector(texts[i], q.Requests[i].dims())}
	}
	x.writeJSON(a, 1, struct {
		Embeddings []geminiEmbedding `json:"embeddings"`
	}{out})
}
