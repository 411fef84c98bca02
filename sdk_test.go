package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"
)

// answer is what a client saw: the text, the tool calls, and the usage it was told.
type answer struct {
	text          string
	input, output int64
	toolCalls     []string // name(arguments)
}

// sdkClient asks one question through one official SDK.
type sdkClient struct {
	name string
	ask  func(ctx context.Context, g *genEnv, model, prompt string, stream bool) (answer, error)
}

func openaiClient(g *genEnv, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(g.base + "/v1/"), option.WithAPIKey(g.key), option.WithMaxRetries(0)}, opts...)...)
}

func anthropicClient(g *genEnv, opts ...anthropicopt.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]anthropicopt.RequestOption{anthropicopt.WithBaseURL(g.base + "/"), anthropicopt.WithAPIKey(g.key), anthropicopt.WithMaxRetries(0)}, opts...)...)
}

func genaiClient(ctx context.Context, g *genEnv) (*genai.Client, error) {
	return genai.NewClient(ctx, &genai.ClientConfig{APIKey: g.key, Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: g.base + "/"}})
}

var sdkClients = []sdkClient{
	{"chat", func(ctx context.Context, g *genEnv, model, prompt string, stream bool) (answer, error) {
		c := openaiClient(g)
		params := openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}
		if !stream {
			r, err := c.Chat.Completions.New(ctx, params)
			if err != nil {
				return answer{}, err
			}
			return answer{text: r.Choices[0].Message.Content, input: r.Usage.PromptTokens, output: r.Usage.CompletionTokens}, nil
		}
		s := c.Chat.Completions.NewStreaming(ctx, params)
		var acc openai.ChatCompletionAccumulator
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		if err := s.Err(); err != nil {
			return answer{}, err
		}
		if len(acc.Choices) == 0 {
			return answer{}, errors.New("no choices")
		}
		return answer{text: acc.Choices[0].Message.Content, input: acc.Usage.PromptTokens, output: acc.Usage.CompletionTokens}, nil
	}},
	{"responses", func(ctx context.Context, g *genEnv, model, prompt string, stream bool) (answer, error) {
		c := openaiClient(g)
		params := responses.ResponseNewParams{Model: model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}}
		if !stream {
			r, err := c.Responses.New(ctx, params)
			if err != nil {
				return answer{}, err
			}
			return answer{text: r.OutputText(), input: r.Usage.InputTokens, output: r.Usage.OutputTokens}, nil
		}
		s := c.Responses.NewStreaming(ctx, params)
		var done *responses.Response
		for s.Next() {
			if ev := s.Current(); ev.Type == "response.completed" {
				r := ev.Response
				done = &r
			}
		}
		if err := s.Err(); err != nil {
			return answer{}, err
		}
		if done == nil {
			return answer{}, errors.New("the stream ended without response.completed")
		}
		return answer{text: done.OutputText(), input: done.Usage.InputTokens, output: done.Usage.OutputTokens}, nil
	}},
	{"messages", func(ctx context.Context, g *genEnv, model, prompt string, stream bool) (answer, error) {
		c := anthropicClient(g)
		params := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 256,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}}
		var msg anthropic.Message
		if !stream {
			r, err := c.Messages.New(ctx, params)
			if err != nil {
				return answer{}, err
			}
			msg = *r
		} else {
			s := c.Messages.NewStreaming(ctx, params)
			for s.Next() {
				if err := msg.Accumulate(s.Current()); err != nil {
					return answer{}, fmt.Errorf("accumulate: %w", err)
				}
			}
			if err := s.Err(); err != nil {
				return answer{}, err
			}
		}
		var text strings.Builder
		for _, b := range msg.Content {
			text.WriteString(b.Text)
		}
		u := msg.Usage
		return answer{text: text.String(), input: u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens, output: u.OutputTokens}, nil
	}},
	{"gemini", func(ctx context.Context, g *genEnv, model, prompt string, stream bool) (answer, error) {
		c, err := genaiClient(ctx, g)
		if err != nil {
			return answer{}, err
		}
		if !stream {
			r, err := c.Models.GenerateContent(ctx, model, genai.Text(prompt), nil)
			if err != nil {
				return answer{}, err
			}
			return answer{text: r.Text(), input: int64(r.UsageMetadata.PromptTokenCount), output: int64(r.UsageMetadata.CandidatesTokenCount + r.UsageMetadata.ThoughtsTokenCount)}, nil
		}
		var a answer
		for r, err := range c.Models.GenerateContentStream(ctx, model, genai.Text(prompt), nil) {
			if err != nil {
				return answer{}, err
			}
			a.text += r.Text()
			if u := r.UsageMetadata; u != nil {
				a.input, a.output = int64(u.PromptTokenCount), int64(u.CandidatesTokenCount+u.ThoughtsTokenCount)
			}
		}
		return a, nil
	}},
}

var upstreamKinds = []struct{ model, kind, path string }{
	{"m-openai", "openai", "/v1/chat/completions"},
	{"m-anthropic", "anthropic", "/v1/messages"},
	{"m-gemini", "gemini", "/v1beta/models/up-gemini:"},
}

// Every client protocol reaches every upstream kind, streamed and not, and the usage the client
// is told is the usage core metered (spec 1, 6.4).
func TestEveryClientReachesEveryUpstream(t *testing.T) {
	g := startGen(t)
	for _, c := range sdkClients {
		for _, up := range upstreamKinds {
			for _, stream := range []bool{false, true} {
				name := fmt.Sprintf("%s→%s/stream=%v", c.name, up.kind, stream)
				t.Run(name, func(t *testing.T) {
					ctx := context.Background()
					prompt := "hello from " + name
					a, err := c.ask(ctx, g, up.model, prompt, stream)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if a.text == "" {
						t.Fatalf("empty answer")
					}
					if a.input <= 0 || a.output <= 0 {
						t.Fatalf("usage seen by the client: input %d, output %d", a.input, a.output)
					}
					call := g.up.Last(t)
					if !strings.HasPrefix(call.Path, upstreamPath(c.name, up.kind, up.path)) {
						t.Errorf("upstream path %q, want prefix %q", call.Path, upstreamPath(c.name, up.kind, up.path))
					}
					if strings.Contains(string(call.Body), `"`+up.model+`"`) {
						t.Errorf("the public model id reached the upstream: %s", call.Body)
					}
				})
			}
		}
	}
}

// upstreamPath is where a client protocol lands on an upstream kind: the kind's main route,
// except responses clients on an OpenAI upstream, which pass through to /v1/responses.
func upstreamPath(client, kind, main string) string {
	if kind == "openai" && client == "responses" {
		return "/v1/responses"
	}
	return main
}

func statusOf(err error) int {
	var oe *openai.Error
	if errors.As(err, &oe) {
		return oe.StatusCode
	}
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		return ae.StatusCode
	}
	var ge genai.APIError
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// Upstream failures reach every client with the upstream's meaningful status (spec 7).
func TestUpstreamErrorsKeepMeaningfulStatus(t *testing.T) {
	g := startGen(t)
	for _, c := range sdkClients {
		for _, tc := range []struct {
			directive string
			want      int
		}{{"#sim:fail=429", http.StatusTooManyRequests}, {"#sim:fail=500", http.StatusBadGateway}, {"#sim:fail=400", http.StatusBadRequest}} {
			t.Run(c.name+tc.directive, func(t *testing.T) {
				_, err := c.ask(context.Background(), g, "m-anthropic", "please fail "+tc.directive, false)
				if err == nil {
					t.Fatal("no error")
				}
				if got := statusOf(err); got != tc.want {
					t.Fatalf("status %d, want %d (%v)", got, tc.want, err)
				}
			})
		}
	}
}
