package rpc_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"modelgateway/core/gatewaytest"
)

// openaiClient is openai-go on the gateway with the profile's key, without retries.
func openaiClient(g *gatewaytest.Gen, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(g.Base + "/v1/"), option.WithAPIKey(g.Key), option.WithMaxRetries(0)}, opts...)...)
}

// openai-go against a key limited to one request per second: the x-ratelimit-* headers do not
// disturb the answer it parses, a 429 surfaces as its error type with our code when it may not
// retry, and when it may, it waits what retry-after says (not its own shorter back-off, which
// would be refused again) and the retry is answered.
func TestOpenAIGoRetriesRateLimitsByRetryAfter(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	k := g.Admin("POST", "/admin/v1/profiles/"+g.ProfileID+"/keys", `{"name":"one","allowed_endpoints":["*"],"allowed_models":["*"],"max_requests_per_second":1,"max_tokens_per_minute":100000}`)
	key := k["secret"].(string)
	type attempt struct {
		status int
		at     time.Time
	}
	var mu sync.Mutex
	var attempts []attempt
	record := option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(r)
		if err == nil {
			mu.Lock()
			attempts = append(attempts, attempt{resp.StatusCode, time.Now()})
			mu.Unlock()
		}
		return resp, err
	})
	params := openai.ChatCompletionNewParams{Model: "m-openai", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	ctx := context.Background()

	// The first is answered and parsed, with the headers beside it.
	var raw *http.Response
	client := openaiClient(g, option.WithAPIKey(key), record)
	c, err := client.Chat.Completions.New(ctx, params, option.WithResponseInto(&raw))
	if err != nil || len(c.Choices) == 0 || c.Choices[0].Message.Content == "" || c.Usage.TotalTokens == 0 {
		t.Fatalf("first: %v %+v", err, c)
	}
	if raw.Header.Get("x-ratelimit-limit-requests") != "1" || raw.Header.Get("x-ratelimit-remaining-requests") != "0" ||
		raw.Header.Get("x-ratelimit-limit-tokens") != "100000" || raw.Header.Get("x-ratelimit-reset-tokens") == "" {
		t.Errorf("first answer's headers %v", raw.Header)
	}
	// At once again, without retries: the SDK's error with status 429 and the spec's code.
	once := openaiClient(g, option.WithAPIKey(key))
	_, err = once.Chat.Completions.New(ctx, params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "rate_limited" || apiErr.Response.Header.Get("retry-after") != "1" {
		t.Fatalf("without retries: %v", err)
	}
	// With retries: the 429 is retried after retry-after, and the retry is answered.
	mu.Lock()
	attempts = nil
	mu.Unlock()
	retrying := openaiClient(g, option.WithAPIKey(key), record, option.WithMaxRetries(3))
	c, err = retrying.Chat.Completions.New(ctx, params)
	if err != nil || len(c.Choices) == 0 {
		t.Fatalf("with retries: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(attempts) < 2 || attempts[0].status != 429 || attempts[len(attempts)-1].status != 200 {
		t.Fatalf("attempts %+v, want a 429 retried into a 200", attempts)
	}
	for i := 1; i < len(attempts); i++ {
		if wait := attempts[i].at.Sub(attempts[i-1].at); wait < 900*time.Millisecond {
			t.Errorf("retry %d after %v: retry-after (1 s) not honoured", i, wait)
		}
	}
	if len(attempts) != 2 {
		t.Errorf("attempts %+v: a retry after retry-after should have been answered", attempts)
	}
}
