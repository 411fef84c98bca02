package simulator

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/genai"
)

// The official google.golang.org/genai SDK, pointed at the simulator, must read every answer.

func geminiClient(t *testing.T, o Options) (*Simulator, *genai.Client) {
	t.Helper()
	sim, url := start(t, o)
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "gm-test", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: url + "/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return sim, c
}

var weatherDecl = &genai.Tool{FunctionDeclarations: []*genai.FunctionDeclaration{{
	Name: "get_weather",
	Parameters: &genai.Schema{Type: genai.TypeObject, Required: []string{"city", "days"}, Properties: map[string]*genai.Schema{
		"city": {Type: genai.TypeString}, "days": {Type: genai.TypeInteger},
	}},
}}}

func TestGeminiGenerateContent(t *testing.T) {
	t.Parallel()
	sim, c := geminiClient(t, Options{})
	cfg := &genai.GenerateContentConfig{SystemInstruction: genai.NewContentFromText("Be brief.", genai.RoleUser)}
	contents := genai.Text("hello there #sim:cache=2")
	whole, err := c.Models.GenerateContent(context.Background(), "sim-gemini", contents, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkAnswer(t, whole.Text(), 12)
	if n := sim.Requests("/v1beta/models/sim-gemini:generateContent"); n != 1 {
		t.Errorf("%d requests recorded on generateContent", n)
	}
	u := whole.UsageMetadata
	if u.PromptTokenCount != 9 || u.CachedContentTokenCount != 2 || u.CandidatesTokenCount != 12 || u.TotalTokenCount != 21 {
		t.Errorf("usage %+v", u)
	}
	if whole.Candidates[0].FinishReason != genai.FinishReasonStop || whole.ModelVersion != "sim-gemini" {
		t.Errorf("finish %q model %q", whole.Candidates[0].FinishReason, whole.ModelVersion)
	}

	var text strings.Builder
	var last *genai.GenerateContentResponse
	chunks := 0
	for r, err := range c.Models.GenerateContentStream(context.Background(), "sim-gemini", contents, cfg) {
		if err != nil {
			t.Fatal(err)
		}
		chunks++
		text.WriteString(r.Text())
		if r.UsageMetadata == nil || int(r.UsageMetadata.CandidatesTokenCount) != chunks {
			t.Errorf("chunk %d usage %+v: usage must be cumulative on every chunk", chunks, r.UsageMetadata)
		}
		last = r
	}
	if text.String() != whole.Text() || chunks != 12 || last.Candidates[0].FinishReason != genai.FinishReasonStop {
		t.Errorf("streamed %q in %d chunks", text.String(), chunks)
	}
	if sim.Requests("/v1beta/models/sim-gemini:streamGenerateContent") != 1 {
		t.Error("streaming request not recorded")
	}
	if h := sim.LastHeaders(); h.Get("X-Goog-Api-Key") != "gm-test" {
		t.Errorf("last headers %v", h)
	}
}

func TestGeminiFunctionCall(t *testing.T) {
	t.Parallel()
	_, c := geminiClient(t, Options{})
	cfg := &genai.GenerateContentConfig{Tools: []*genai.Tool{weatherDecl}}
	contents := genai.Text("weather? #sim:think")
	var calls []*genai.FunctionCall
	var signed bool
	for r, err := range c.Models.GenerateContentStream(context.Background(), "sim-gemini", contents, cfg) {
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, r.FunctionCalls()...)
		for _, p := range r.Candidates[0].Content.Parts {
			signed = signed || (p.FunctionCall != nil && len(p.ThoughtSignature) > 0)
		}
	}
	if len(calls) != 1 || calls[0].Name != "get_weather" || calls[0].Args["city"] != "sim" || calls[0].Args["days"] != 1.0 {
		t.Fatalf("calls %+v", calls)
	}
	if !signed {
		t.Error("the function call part after thoughts carries no thoughtSignature")
	}

	contents = append(contents,
		genai.NewContentFromParts([]*genai.Part{genai.NewPartFromFunctionCall(calls[0].Name, calls[0].Args)}, genai.RoleModel),
		genai.NewContentFromParts([]*genai.Part{genai.NewPartFromFunctionResponse("get_weather", map[string]any{"result": "foggy"})}, genai.RoleUser))
	res, err := c.Models.GenerateContent(context.Background(), "sim-gemini", contents, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text(), `"foggy"`) || len(res.FunctionCalls()) != 0 {
		t.Errorf("answer after the function response %q", res.Text())
	}
}

func TestGeminiThoughts(t *testing.T) {
	t.Parallel()
	_, c := geminiClient(t, Options{})
	res, err := c.Models.GenerateContent(context.Background(), "m", genai.Text("ponder #sim:think"), nil)
	if err != nil {
		t.Fatal(err)
	}
	parts := res.Candidates[0].Content.Parts
	if len(parts) != 2 || !parts[0].Thought || parts[1].Thought || len(parts[1].ThoughtSignature) == 0 {
		t.Fatalf("parts %+v", parts)
	}
	u := res.UsageMetadata
	if u.ThoughtsTokenCount == 0 || u.CandidatesTokenCount != 12 || u.TotalTokenCount != u.PromptTokenCount+u.CandidatesTokenCount+u.ThoughtsTokenCount {
		t.Errorf("usage %+v", u)
	}
}

func TestGeminiMaxOutputTokens(t *testing.T) {
	t.Parallel()
	_, c := geminiClient(t, Options{})
	res, err := c.Models.GenerateContent(context.Background(), "m", genai.Text("hi"), &genai.GenerateContentConfig{MaxOutputTokens: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Candidates[0].FinishReason != genai.FinishReasonMaxTokens || len(strings.Fields(res.Text())) != 2 {
		t.Errorf("limited %q (%s)", res.Text(), res.Candidates[0].FinishReason)
	}
}

func TestGeminiCountTokens(t *testing.T) {
	t.Parallel()
	_, c := geminiClient(t, Options{})
	res, err := c.Models.CountTokens(context.Background(), "sim-gemini", genai.Text("twelve bytes"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.TotalTokens != 3 {
		t.Errorf("total tokens %d, want 3", res.TotalTokens)
	}
}

func TestGeminiEmbedContent(t *testing.T) {
	t.Parallel()
	sim, c := geminiClient(t, Options{})
	dims := int32(5)
	res, err := c.Models.EmbedContent(context.Background(), "sim-embedding",
		[]*genai.Content{genai.NewContentFromText("a cat", genai.RoleUser), genai.NewContentFromText("a dog", genai.RoleUser)},
		&genai.EmbedContentConfig{OutputDimensionality: &dims})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Embeddings) != 2 || len(res.Embeddings[0].Values) != 5 || res.Embeddings[0].Values[0] == res.Embeddings[1].Values[0] {
		t.Fatalf("embeddings %+v", res.Embeddings)
	}
	if sim.Requests("/v1beta/models/sim-embedding:batchEmbedContents") != 1 {
		t.Error("the Go SDK's batchEmbedContents call was not recorded")
	}
}

func TestGeminiErrors(t *testing.T) {
	t.Parallel()
	_, c := geminiClient(t, Options{})
	_, err := c.Models.GenerateContent(context.Background(), "m", genai.Text("#sim:fail=503"), nil)
	var apiErr genai.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != 503 || apiErr.Status != "UNAVAILABLE" {
		t.Fatalf("error %v", err)
	}
	var streamErr error
	for _, err := range c.Models.GenerateContentStream(context.Background(), "m", genai.Text("#sim:error-mid"), nil) {
		if err != nil {
			streamErr = err
			break
		}
	}
	if !errors.As(streamErr, &apiErr) || apiErr.Status != "UNAVAILABLE" || !strings.Contains(apiErr.Message, "mid-stream") {
		t.Fatalf("mid-stream error %v", streamErr)
	}
}
