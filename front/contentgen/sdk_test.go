package contentgen

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/genai"

	corev1 "modelgateway/gen/gateway/core/v1"
)

// sdkServer serves every request with the encoder fed a fixed event sequence, as the relay
// would after core answered. hide removes the SDK's identification first, so the encoder
// treats it as any other client.
func sdkServer(t *testing.T, events []*corev1.GenerateEvent, fail *corev1.StreamError, hide bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(r.Header.Get("X-Goog-Api-Client"), "google-genai-sdk/") {
			t.Errorf("the SDK did not identify itself: x-goog-api-client %q", r.Header.Get("X-Goog-Api-Client"))
		}
		if hide {
			r.Header.Del("X-Goog-Api-Client")
			r.Header.Del("User-Agent")
		}
		req, apiErr := Protocol{}.Decode(r, body)
		if apiErr != nil {
			t.Errorf("Decode of the SDK's request: %v", apiErr)
			http.Error(w, apiErr.Message, 400)
			return
		}
		enc := Protocol{}.Encoder(w, r, req)
		if err := enc.Start(&corev1.Start{Id: "resp-1", Model: req.GetModel(), Created: 1700000000}); err != nil {
			t.Error(err)
			return
		}
		for _, ev := range events {
			if err := enc.Event(ev); err != nil {
				t.Error(err)
				return
			}
		}
		if fail != nil {
			enc.Fail(fail)
			return
		}
		_ = enc.Finish()
	}))
	t.Cleanup(srv.Close)
	return srv
}

func sdkClient(t *testing.T, srv *httptest.Server) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "k", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL + "/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type streamResult struct {
	text, thoughts string
	calls          []*genai.FunctionCall
	finish         genai.FinishReason
	usage          *genai.GenerateContentResponseUsageMetadata
	err            error
}

func consume(t *testing.T, c *genai.Client) streamResult {
	t.Helper()
	var res streamResult
	for chunk, err := range c.Models.GenerateContentStream(context.Background(), "gemini-2.5-flash", genai.Text("Hi"), nil) {
		if err != nil {
			res.err = err
			break
		}
		for _, cand := range chunk.Candidates {
			if cand.FinishReason != "" {
				res.finish = cand.FinishReason
			}
			if cand.Content == nil {
				continue
			}
			for _, p := range cand.Content.Parts {
				switch {
				case p.FunctionCall != nil:
					res.calls = append(res.calls, p.FunctionCall)
				case p.Thought:
					res.thoughts += p.Text
				default:
					res.text += p.Text
				}
			}
		}
		if chunk.UsageMetadata != nil {
			res.usage = chunk.UsageMetadata
		}
	}
	return res
}

func TestSDKConsumesTheStream(t *testing.T) {
	t.Parallel()
	res := consume(t, sdkClient(t, sdkServer(t, textAnswer, nil, false)))
	if res.err != nil {
		t.Fatalf("GenerateContentStream: %v", res.err)
	}
	if res.text != "Hello!" || res.thoughts != "Greeting back." || res.finish != genai.FinishReasonStop {
		t.Errorf("got text %q thoughts %q finish %q", res.text, res.thoughts, res.finish)
	}
	if u := res.usage; u == nil || u.PromptTokenCount != 8 || u.CandidatesTokenCount != 4 || u.ThoughtsTokenCount != 8 || u.CachedContentTokenCount != 3 || u.TotalTokenCount != 20 {
		t.Errorf("usage = %+v", res.usage)
	}
}

func TestSDKReadsToolCalls(t *testing.T) {
	t.Parallel()
	res := consume(t, sdkClient(t, sdkServer(t, toolAnswer, nil, false)))
	if res.err != nil {
		t.Fatalf("GenerateContentStream: %v", res.err)
	}
	if len(res.calls) != 2 || res.calls[0].Name != "get_weather" || res.calls[0].Args["city"] != "Oslo" || res.calls[0].ID != "call_a" || res.calls[1].Name != "get_time" {
		t.Errorf("calls = %+v", res.calls)
	}
}

// The control: the same stream with the marker is what breaks the SDK, so the test above
// proves the rule rather than passing by accident.
func TestSDKFailsOnTheDoneMarker(t *testing.T) {
	t.Parallel()
	res := consume(t, sdkClient(t, sdkServer(t, textAnswer, nil, true)))
	if res.err == nil || !strings.Contains(res.err.Error(), "DONE") {
		t.Fatalf("err = %v, want the SDK to reject the [DONE] line", res.err)
	}
}

func TestSDKReportsAStreamError(t *testing.T) {
	t.Parallel()
	res := consume(t, sdkClient(t, sdkServer(t, []*corev1.GenerateEvent{evText("Hel")}, &corev1.StreamError{Code: "upstream_error", Message: "boom"}, false)))
	var apiErr genai.APIError
	if !errors.As(res.err, &apiErr) || apiErr.Code != 502 || apiErr.Message != "boom" || apiErr.Status != "UNAVAILABLE" {
		t.Fatalf("err = %#v, want an APIError 502 UNAVAILABLE", res.err)
	}
	if res.text != "Hel" {
		t.Errorf("text before the error = %q", res.text)
	}
}

func TestSDKNonStreaming(t *testing.T) {
	t.Parallel()
	c := sdkClient(t, sdkServer(t, toolAnswer, nil, false))
	resp, err := c.Models.GenerateContent(context.Background(), "gemini-2.5-flash", genai.Text("Hi"), nil)
	if err != nil {
		t.Fatalf("GenerateContent: %v", err)
	}
	if resp.Text() != "Checking." || len(resp.FunctionCalls()) != 2 || resp.ResponseID != "resp-1" {
		t.Errorf("text %q calls %+v id %q", resp.Text(), resp.FunctionCalls(), resp.ResponseID)
	}
}
