package simulator

import (
	"encoding/json"
	"math"
	"slices"
)

// POST /v1/rerank, in the shape Jina and Cohere v1 share.

type rerankRequest struct {
	Model           string            `json:"model"`
	Query           *string           `json:"query"`
	Documents       []json.RawMessage `json:"documents"`
	TopN            int               `json:"top_n"`
	ReturnDocuments bool              `json:"return_documents"`
}

type rerankDocument struct {
	Text string `json:"text"`
}

type rerankResult struct {
	Index          int             `json:"index"`
	RelevanceScore float64         `json:"relevance_score"`
	Document       *rerankDocument `json:"document,omitempty"`
}

// documentText reads a document: a string or an object with a text field.
func documentText(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var d struct {
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &d) == nil && d.Text != nil {
		return *d.Text, true
	}
	return "", false
}

// relevance scores a document against the query: mostly the share of the query's words the
// document contains, plus a small hash of both so that ties break the same way every time.
// The result lies in [0, 1].
func relevance(query, doc string) float64 {
	qw := slices.Compact(slices.Sorted(slices.Values(lowerWords(query))))
	dw := lowerWords(doc)
	hits := 0
	for _, w := range qw {
		if slices.Contains(dw, w) {
			hits++
		}
	}
	overlap := 0.0
	if len(qw) > 0 {
		overlap = float64(hits) / float64(len(qw))
	}
	score := 0.9*overlap + 0.1*unit(hash64(query, doc))
	return math.Round(score*1e6) / 1e6
}

func serveRerank(x *exchange) {
	var q rerankRequest
	if !x.decode(&q) {
		return
	}
	switch {
	case q.Query == nil:
		missingParam(x.w, "query")
		return
	case len(q.Documents) == 0:
		missingParam(x.w, "documents")
		return
	}
	texts := make([]string, len(q.Documents))
	tokens := tokensOf(*q.Query)
	for i, raw := range q.Documents {
		t, ok := documentText(raw)
		if !ok {
			invalidParam(x.w, "documents", "Each document must be a string or an object with a text field.")
			return
		}
		texts[i] = t
		tokens += tokensOf(t)
	}
	a := mediaAnswer(*q.Query)
	if !x.begin(a) {
		return
	}
	results := make([]rerankResult, len(texts))
	for i, t := range texts {
		results[i] = rerankResult{Index: i, RelevanceScore: relevance(*q.Query, t)}
		if q.ReturnDocuments {
			results[i].Document = &rerankDocument{t}
		}
	}
	slices.SortStableFunc(results, func(a, b rerankResult) int {
		switch {
		case a.RelevanceScore > b.RelevanceScore:
			return -1
		case a.RelevanceScore < b.RelevanceScore:
			return 1
		}
		return a.Index - b.Index
	})
	if q.TopN > 0 && q.TopN < len(results) {
		results = results[:q.TopN]
	}
	type usage struct {
		TotalTokens int `json:"total_tokens"`
	}
	x.writeJSON(a, 1, struct {
		ID      string         `json:"id"`
		Model   string         `json:"model"`
		Results []rerankResult `json:"results"`
		Usage   usage          `json:"usage"`
	}{"rerank-" + a.id, q.Model, results, usage{tokens}})
}
