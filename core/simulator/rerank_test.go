package simulator

import (
	"encoding/json"
	"net/http"
	"testing"
)

// Rerank has no official Go SDK; its answers are checked as raw JSON.

type rerankAnswer struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Results []struct {
		Index          int                    `json:"index"`
		RelevanceScore float64                `json:"relevance_score"`
		Document       *struct{ Text string } `json:"document"`
	} `json:"results"`
	Usage struct {
		TotalTokens int `json:"total_tokens"`
	} `json:"usage"`
}

func TestRerank(t *testing.T) {
	t.Parallel()
	_, url := start(t, Options{})
	docs := `["Berlin is in Germany.",{"text":"Paris is the capital of France."},"France exports wine."]`
	cases := []struct {
		name, body string
		order      []int // result indexes, best first
		documents  bool
	}{
		{"all documents, best first", `{"model":"rr","query":"capital of France","documents":` + docs + `}`, []int{1, 2, 0}, false},
		{"top_n keeps the best", `{"model":"rr","query":"capital of France","documents":` + docs + `,"top_n":1,"return_documents":true}`, []int{1}, true},
		{"top_n above the count keeps all", `{"model":"rr","query":"capital of France","documents":` + docs + `,"top_n":9}`, []int{1, 2, 0}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var res rerankAnswer
			if err := json.Unmarshal(mustPost(t, url, "/v1/rerank", tc.body), &res); err != nil {
				t.Fatal(err)
			}
			if res.Model != "rr" || res.ID == "" || len(res.Results) != len(tc.order) {
				t.Fatalf("answer %+v", res)
			}
			// "capital of France" = 5 tokens; the documents 6, 8 and 5 tokens.
			if res.Usage.TotalTokens != 5+6+8+5 {
				t.Errorf("total_tokens %d", res.Usage.TotalTokens)
			}
			prev := 2.0
			for i, r := range res.Results {
				if r.Index != tc.order[i] || r.RelevanceScore < 0 || r.RelevanceScore > 1 || r.RelevanceScore > prev {
					t.Errorf("result %d: %+v, want index %d and scores descending in [0,1]", i, r, tc.order[i])
				}
				prev = r.RelevanceScore
				if (r.Document != nil) != tc.documents {
					t.Errorf("result %d: document %+v, return_documents %v", i, r.Document, tc.documents)
				}
			}
			if tc.documents && res.Results[0].Document.Text != "Paris is the capital of France." {
				t.Errorf("document %+v", res.Results[0].Document)
			}
		})
	}
	golden(t, "rerank.json", mustPost(t, url, "/v1/rerank", cases[1].body))
}

func TestRerankErrors(t *testing.T) {
	t.Parallel()
	_, url := start(t, Options{})
	cases := []struct {
		name, body string
		status     int
		param      string
	}{
		{"no query", `{"model":"rr","documents":["a"]}`, 400, "query"},
		{"no documents", `{"model":"rr","query":"q"}`, 400, "documents"},
		{"empty documents", `{"model":"rr","query":"q","documents":[]}`, 400, "documents"},
		{"a document of the wrong type", `{"model":"rr","query":"q","documents":[3]}`, 400, "documents"},
		{"fail directive", `{"model":"rr","query":"q #sim:fail=503","documents":["a"]}`, 503, ""},
	}
	for _, tc := range cases {
		status, _, raw, _ := post(t, url, "/v1/rerank", tc.body)
		var e struct {
			Error openAIError `json:"error"`
		}
		if err := json.Unmarshal(raw, &e); err != nil || status != tc.status || e.Error.Message == "" {
			t.Errorf("%s: %d %s", tc.name, status, raw)
			continue
		}
		if tc.param != "" && (e.Error.Param == nil || *e.Error.Param != tc.param) {
			t.Errorf("%s: param in %s, want %q", tc.name, raw, tc.param)
		}
	}
	if status, _, _, _ := post(t, url, "/v1/rerank", `{"query":`); status != http.StatusBadRequest {
		t.Errorf("invalid JSON: %d", status)
	}
}
