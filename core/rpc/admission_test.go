package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/proto"

	adminv1 "modelgateway/gen/gateway/admin/v1"
	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
)

func ids(models []*corev1.Model) []string {
	var out []string
	for _, m := range models {
		out = append(out, m.GetId())
	}
	return out
}

func genNames(models []*corev1.GenerativeModel) []string {
	var out []string
	for _, m := range models {
		out = append(out, m.GetName())
	}
	return out
}

// The model lists and single-model lookups show a key what it may use, nothing more.
func TestDiscoveryShowsOnlyWhatTheKeyMayUse(t *testing.T) {
	t.Parallel()
	e := newCoreEnv(t, 1)
	ctx := context.Background()
	chatKey, _ := e.profile(t, "1", []string{"chat.completions"}, []string{"m-a", "m-b"}, 0, 0)
	contentKey, _ := e.profile(t, "1", []string{"content.generate", "content.count_tokens"}, []string{"*"}, 0, 0)

	list, err := e.core.ListModels(as(chatKey, ""), &corev1.ListModelsRequest{})
	if err != nil || !slices.Equal(ids(list.GetData()), []string{"m-a", "m-b"}) || list.GetObject() != "list" {
		t.Fatalf("ListModels: %v %v", ids(list.GetData()), err)
	}
	if m, err := e.core.GetModel(as(chatKey, ""), &corev1.GetModelRequest{Model: "m-a/"}); err != nil || m.GetId() != "m-a" {
		t.Errorf("GetModel m-a/ (grpc-gateway's rendering of an empty **): %v %v", m, err)
	}
	if _, err := e.core.GetModel(as(chatKey, ""), &corev1.GetModelRequest{Model: "m-limited"}); code(err) != apierror.ModelNotFound {
		t.Errorf("GetModel of a model the key may not use: %v", err)
	}
	if _, err := e.core.ListModels(as("sk-nope", ""), &corev1.ListModelsRequest{}); code(err) != apierror.InvalidKey {
		t.Errorf("ListModels with a bad key: %v", err)
	}
	for _, bad := range []string{"", "Bearer", "Basic abc", "Bearer sk-nope"} {
		ctx := context.Background()
		if bad != "" {
			ctx = asRaw(bad)
		}
		if _, err := e.core.ListModels(ctx, &corev1.ListModelsRequest{}); code(err) != apierror.InvalidKey {
			t.Errorf("authorization %q: %v", bad, err)
		}
	}
	if _, err := e.core.ListModels(asRaw("bEaReR  "+chatKey+" "), &corev1.ListModelsRequest{}); err != nil {
		t.Errorf("the scheme is case-insensitive and the credential trimmed: %v", err)
	}

	compat, err := e.core.ListCompatModels(as(contentKey, ""), &corev1.ListCompatModelsRequest{})
	if err != nil || !slices.Equal(ids(compat.GetData()), []string{"m-a", "m-b"}) {
		t.Fatalf("ListCompatModels: %v %v", ids(compat.GetData()), err)
	}
	if compat, err := e.core.ListCompatModels(as(chatKey, ""), &corev1.ListCompatModelsRequest{}); err != nil || len(compat.GetData()) != 0 {
		t.Errorf("ListCompatModels for a key without content routes: %v %v", ids(compat.GetData()), err)
	}

	gen, err := e.core.ListGenerativeModels(as(contentKey, ""), &corev1.ListGenerativeModelsRequest{})
	if err != nil || !slices.Equal(genNames(gen.GetModels()), []string{"models/m-a", "models/m-b"}) || gen.GetNextPageToken() != "" {
		t.Fatalf("ListGenerativeModels: %v %q %v", genNames(gen.GetModels()), gen.GetNextPageToken(), err)
	}
	a, b := gen.GetModels()[0], gen.GetModels()[1]
	// m-a streams and serves counting (and embedding, which the key may not use); m-b does not
	// stream and serves generation only.
	if !slices.Equal(a.GetSupportedGenerationMethods(), []string{"generateContent", "streamGenerateContent", "countTokens"}) ||
		a.GetDisplayName() != "Model A" || a.GetBaseModelId() != "m-a" {
		t.Errorf("m-a: %v", a)
	}
	if !slices.Equal(b.GetSupportedGenerationMethods(), []string{"generateContent"}) || b.GetDisplayName() != "m-b" {
		t.Errorf("m-b: %v", b)
	}

	pages := []struct {
		size  int32
		token string
		want  []string
		next  string
		code  string
	}{
		{1, "", []string{"models/m-a"}, "1", ""},
		{1, "1", []string{"models/m-b"}, "", ""},
		{2, "0", []string{"models/m-a", "models/m-b"}, "", ""},
		{0, "1", []string{"models/m-b"}, "", ""},
		{-3, "", []string{"models/m-a", "models/m-b"}, "", ""},
		{5000, "", []string{"models/m-a", "models/m-b"}, "", ""},
		{1, "2", nil, "", ""},
		{1, "3", nil, "", apierror.InvalidRequest},
		{1, "-1", nil, "", apierror.InvalidRequest},
		{1, "x", nil, "", apierror.InvalidRequest},
	}
	for _, p := range pages {
		got, err := e.core.ListGenerativeModels(as(contentKey, ""), &corev1.ListGenerativeModelsRequest{PageSize: p.size, PageToken: p.token})
		if code(err) != p.code {
			t.Errorf("page size %d token %q: %v, want %q", p.size, p.token, err, p.code)
			continue
		}
		if err == nil && (!slices.Equal(genNames(got.GetModels()), p.want) || got.GetNextPageToken() != p.next) {
			t.Errorf("page size %d token %q: %v next %q, want %v next %q", p.size, p.token, genNames(got.GetModels()), got.GetNextPageToken(), p.want, p.next)
		}
	}
	for _, id := range []string{"models/m-a", "m-a", "models/m-a/"} {
		if m, err := e.core.GetGenerativeModel(as(contentKey, ""), &corev1.GetGenerativeModelRequest{Model: id}); err != nil || m.GetName() != "models/m-a" {
			t.Errorf("GetGenerativeModel %q: %v %v", id, m, err)
		}
	}
	if _, err := e.core.GetGenerativeModel(as(contentKey, ""), &corev1.GetGenerativeModelRequest{Model: "models/m-limited"}); code(err) != apierror.ModelNotFound {
		t.Errorf("GetGenerativeModel of a chat-only model: %v", err)
	}
	if _, err := e.core.GetGenerativeModel(as("sk-nope", ""), &corev1.GetGenerativeModelRequest{Model: "m-a"}); code(err) != apierror.InvalidKey {
		t.Errorf("GetGenerativeModel with a bad key: %v", err)
	}
	if _, err := e.core.ListGenerativeModels(as("sk-nope", ""), &corev1.ListGenerativeModelsRequest{}); code(err) != apierror.InvalidKey {
		t.Errorf("ListGenerativeModels with a bad key: %v", err)
	}
	if _, err := e.core.ListCompatModels(as("sk-nope", ""), &corev1.ListCompatModelsRequest{}); code(err) != apierror.InvalidKey {
		t.Errorf("ListCompatModels with a bad key: %v", err)
	}
	if _, err := e.core.GetModel(as("sk-nope", ""), &corev1.GetModelRequest{Model: "m-a"}); code(err) != apierror.InvalidKey {
		t.Errorf("GetModel with a bad key: %v", err)
	}
	_ = ctx
}

// asRaw calls with an authorization value as it is.
func asRaw(authorization string) context.Context {
	return metadataContext(MetadataAuthorization, authorization)
}

// Authorize answers what the front may decide before the body: key, family, model and, when
// asked, the balance.
func TestAuthorize(t *testing.T) {
	t.Parallel()
	e := newCoreEnv(t, 1)
	rich, richProfile := e.profile(t, "100", []string{"chat.completions", "content.count_tokens"}, []string{"m-a", "m-flat"}, 0, 0)
	poor, _ := e.profile(t, "0", []string{"*"}, []string{"*"}, 0, 0)
	cases := []struct {
		name, key, family, model string
		checkBalance             bool
		code                     string
	}{
		{"a key, family and model it may use", rich, "chat.completions", "m-a", true, ""},
		{"no model on the path", rich, "chat.completions", "", true, ""},
		{"a bad key", "sk-nope", "chat.completions", "m-a", false, apierror.InvalidKey},
		{"a family the key may not use", rich, "embeddings", "", false, apierror.EndpointNotAllowed},
		{"a model the key may not use", rich, "chat.completions", "m-b", false, apierror.ModelNotAllowed},
		{"a model that does not exist", rich, "chat.completions", "nope", false, apierror.ModelNotFound},
		{"an empty balance, not asked about it", poor, "chat.completions", "m-a", false, ""},
		{"an empty balance, asked", poor, "chat.completions", "m-a", true, apierror.InsufficientBalance},
		{"an empty balance on a per-request model", poor, "chat.completions", "m-flat", true, apierror.InsufficientBalance},
		{"an empty balance, no model named, every usable model priced", poor, "content.generate", "", true, apierror.InsufficientBalance},
		{"an empty balance, no model named, an unpriced model usable", poor, "chat.completions", "", true, ""},
		{"a positive balance on a free route", rich, "content.count_tokens", "m-a", true, ""},
		{"an empty balance on a free route", poor, "content.count_tokens", "m-a", true, apierror.InsufficientBalance},
	}
	for _, c := range cases {
		resp, err := e.core.Authorize(as(c.key, "auth-"+strings.ReplaceAll(c.name, " ", "-")),
			&corev1.AuthorizeRequest{EndpointFamily: c.family, Model: c.model, CheckBalance: c.checkBalance})
		if code(err) != c.code {
			t.Errorf("%s: %v, want %q", c.name, err, c.code)
			continue
		}
		if err == nil && c.key == rich && (resp.GetProfileId() != richProfile.String() || resp.GetKeyId() == "" ||
			resp.GetRequestId() != "auth-"+strings.ReplaceAll(c.name, " ", "-")) {
			t.Errorf("%s: %v", c.name, resp)
		}
	}
}

// /v1/balance: the ledger balance and, as available, what no replica has reserved.
func TestGetBalanceLessWhatIsHeld(t *testing.T) {
	t.Parallel()
	e := newCoreEnv(t, 1)
	key, p := e.profile(t, "100", []string{"*"}, []string{"*"}, 0, 0)
	b, err := e.core.GetBalance(as(key, ""), &corev1.GetBalanceRequest{})
	if err != nil || b.GetBalance() != "100" || b.GetAvailable() != "100" || b.GetCurrency() != "RUB" || b.GetProfileId() != p.String() || b.GetObject() != "balance" {
		t.Fatalf("before a hold: %v %v", b, err)
	}
	h, err := e.ledger.Hold(context.Background(), p, decimal.NewFromInt(3))
	if err != nil {
		t.Fatal(err)
	}
	_ = h
	leased, err := e.st.Leased(context.Background(), p)
	if err != nil || !leased.IsPositive() {
		t.Fatalf("leased %s %v", leased, err)
	}
	b, err = e.core.GetBalance(as(key, ""), &corev1.GetBalanceRequest{})
	if err != nil || b.GetBalance() != "100" || b.GetAvailable() != decimal.NewFromInt(100).Sub(leased).String() {
		t.Fatalf("with %s leased: %v %v", leased, b, err)
	}
	if _, err := e.core.GetBalance(as("sk-nope", ""), &corev1.GetBalanceRequest{}); code(err) != apierror.InvalidKey {
		t.Errorf("a bad key: %v", err)
	}
}

// chat is a chat-completions request of the model with a raw body of rawBytes bytes that says
// what its fields say (the listener checks that they agree: external.go).
func chat(model string, rawBytes int, maxTokens *int64, stream bool) *corev1.GenerateRequest {
	head := `{"model":"` + model + `",`
	if maxTokens != nil {
		head += fmt.Sprintf(`"max_tokens":%d,`, *maxTokens)
	}
	if stream {
		head += `"stream":true,`
	}
	head += `"messages":[{"role":"user","content":"hi`
	tail := `"}]}`
	raw := head + strings.Repeat(" ", max(0, rawBytes-len(head)-len(tail))) + tail
	return &corev1.GenerateRequest{EndpointFamily: "chat.completions", Protocol: corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS,
		Model: model, Stream: stream, RawBody: []byte(raw), MaxOutputTokens: maxTokens,
		Messages: []*corev1.Message{{Role: corev1.Role_ROLE_USER, Parts: []*corev1.Part{{Kind: &corev1.Part_Text{Text: "hi"}}}}}}
}

func ptr[T any](v T) *T { return &v }

// withN asks for n answers, in the fields and the raw body alike; the body keeps its size
// (the padding of its content gives way).
func withN(r *corev1.GenerateRequest, n int32) *corev1.GenerateRequest {
	r.N = &n
	field := fmt.Sprintf(`"n":%d,`, n)
	body := strings.TrimSuffix(string(r.RawBody), `"}]}`)
	body = body[:len(body)-len(field)]
	r.RawBody = []byte(`{` + field + body[1:] + `"}]}`)
	return r
}

// generate runs a Generate call to its end: the events, or the error.
func generate(ctx context.Context, e *coreEnv, req *corev1.GenerateRequest) ([]*corev1.GenerateEvent, error) {
	s, err := e.core.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	var evs []*corev1.GenerateEvent
	for {
		ev, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

// The hold of a generation is its worst case: half a token per byte of the larger of the raw
// body and the structured request, plus 64, at the input rate, and the output limit (the
// request's, else the model's, else 8192) at the output rate. An empty balance shows the
// amount in the refusal; nothing is charged.
func TestGenerationHoldIsTheWorstCase(t *testing.T) {
	t.Parallel()
	e := newCoreEnv(t, 1)
	key, p := e.profile(t, "0", []string{"*"}, []string{"*"}, 0, 0)
	big := chat("m-a", 100, nil, false)
	big.System = strings.Repeat("s", 20000) // the structured request outweighs the raw body
	cases := []struct {
		name string
		req  *corev1.GenerateRequest
		in   int64 // input tokens held
		out  int64
	}{
		{"a 10000-byte body, the default output", chat("m-a", 10000, nil, false), 10000/2 + 64, 8192},
		{"a 10001-byte body, 5 output tokens", chat("m-a", 10001, ptr[int64](5), false), 10001/2 + 64, 5},
		{"the model's output limit", chat("m-limited", 10000, nil, false), 10000/2 + 64, 100},
		{"the request's limit under the model's", chat("m-limited", 10000, ptr[int64](7), false), 10000/2 + 64, 7},
		{"the structured request when larger", big, int64(proto.Size(big)-100)/2 + 64, 8192},
		// Each of n answers may reach the limit, and the upstream bills them all.
		{"n answers of 5 tokens", withN(chat("m-a", 10000, ptr[int64](5), false), 3), 10000/2 + 64, 15},
		{"n answers of the model's limit", withN(chat("m-limited", 10000, nil, false), 4), 10000/2 + 64, 400},
	}
	for _, c := range cases {
		_, err := generate(as(key, ""), e, c.req)
		want := decimal.NewFromInt(c.in).Add(decimal.NewFromInt(2 * c.out)).Shift(-6)
		ae := apistatus.FromError(err)
		if ae.Code != apierror.InsufficientBalance || !strings.Contains(ae.Message, "up to "+want.String()+" RUB") {
			t.Errorf("%s: %v, want insufficient_balance up to %s", c.name, err, want)
		}
	}
	if b := e.balance(t, p, 0); !b.IsZero() {
		t.Fatalf("balance %s", b)
	}
	// The positive case: credited, the same request is served and charged once, below its hold.
	if _, err := e.admin.CreditProfile(context.Background(), &adminv1.CreditProfileRequest{Id: p.String(), Amount: "1", Reason: "topup", IdempotencyKey: "late"}); err != nil {
		t.Fatal(err)
	}
	evs, err := generate(as(key, ""), e, chat("m-a", 10000, ptr[int64](5), false))
	if err != nil {
		t.Fatal(err)
	}
	u := evs[len(evs)-1].GetUsage()
	if u == nil || u.GetCost() == "" || u.GetCurrency() != "RUB" {
		t.Fatalf("last event %v", evs[len(evs)-1])
	}
	cost := decimal.RequireFromString(u.GetCost())
	if b := e.balance(t, p, 1); !b.Equal(decimal.NewFromInt(1).Sub(cost)) || !cost.IsPositive() || cost.GreaterThan(decimal.RequireFromString("0.005074")) {
		t.Fatalf("balance %s after a charge of %s", b, cost)
	}
}

// What Generate refuses before the upstream, and how upstream failures reach the client.
func TestGenerateRefusals(t *testing.T) {
	t.Parallel()
	e := newCoreEnv(t, 1)
	key, p := e.profile(t, "10", []string{"*"}, []string{"*"}, 0, 0)
	narrow, _ := e.profile(t, "10", []string{"chat.completions"}, []string{"m-a"}, 0, 0)
	fail := func(status string) *corev1.GenerateRequest {
		r := chat("m-a", 0, ptr[int64](5), false)
		r.RawBody = []byte(`{"model":"m-a","max_tokens":5,"messages":[{"role":"user","content":"x #sim:fail=` + status + `"}]}`)
		r.Messages[0].Parts[0].Kind = &corev1.Part_Text{Text: "x #sim:fail=" + status}
		return r
	}
	cases := []struct {
		name, key, id string
		req           *corev1.GenerateRequest
		code          string
		status        int
	}{
		{"streaming on a model that does not stream", key, "", chat("m-b", 0, nil, true), apierror.StreamingNotSupported, 0},
		{"an output limit above the model's", key, "", chat("m-limited", 0, ptr[int64](101), false), apierror.InvalidRequest, 400},
		{"no price for the family", key, "", chat("m-unpriced", 0, nil, false), apierror.PricingUnavailable, 0},
		{"a model the key may not use", narrow, "", chat("m-b", 0, nil, false), apierror.ModelNotAllowed, 0},
		{"a family the key may not use", narrow, "", &corev1.GenerateRequest{EndpointFamily: "content.generate", Model: "m-a"}, apierror.EndpointNotAllowed, 0},
		{"a bad key", "sk-nope", "", chat("m-a", 0, nil, false), apierror.InvalidKey, 0},
		{"a request id no client may send", key, "has space", chat("m-a", 0, ptr[int64](5), false), apierror.InvalidRequest, 400},
		{"an upstream 401 is our fault", key, "", fail("401"), apierror.UpstreamError, 502},
		{"an upstream 403 is our fault", key, "", fail("403"), apierror.UpstreamError, 502},
		{"an upstream 400 is the client's", key, "", fail("400"), apierror.UpstreamError, 400},
		{"an upstream 429 stays 429", key, "", fail("429"), apierror.UpstreamError, 429},
		{"an upstream 500 is a bad gateway", key, "", fail("500"), apierror.UpstreamError, 502},
	}
	for _, c := range cases {
		evs, err := generate(as(c.key, c.id), e, c.req)
		ae := apistatus.FromError(err)
		if err == nil {
			// A failure after the status line comes as the stream's error event.
			if n := len(evs); n > 0 && evs[n-1].GetError() != nil {
				ae = &apierror.Error{Code: evs[n-1].GetError().GetCode()}
			} else {
				ae = &apierror.Error{}
			}
		}
		if ae.Code != c.code || (c.status != 0 && ae.HTTPStatus() != c.status) {
			t.Errorf("%s: %v (status %d), want %s %d", c.name, err, ae.HTTPStatus(), c.code, c.status)
		}
	}
	// The output limit equal to the model's is allowed.
	if _, err := generate(as(key, ""), e, chat("m-limited", 0, ptr[int64](100), false)); err != nil {
		t.Errorf("an output limit equal to the model's: %v", err)
	}
	// A client's request id is used once; the flag that marks the gateway's own ids is not
	// believed from a caller over the socket.
	if _, err := generate(as(key, "once"), e, chat("m-a", 0, ptr[int64](5), false)); err != nil {
		t.Fatal(err)
	}
	if _, err := generate(as(key, "once"), e, chat("m-a", 0, ptr[int64](5), false)); code(err) != apierror.DuplicateRequestID {
		t.Errorf("a reused id: %v", err)
	}
	if _, err := generate(as(key, "once", MetadataRequestIDGenerated, "1"), e, chat("m-a", 0, ptr[int64](5), false)); code(err) != apierror.DuplicateRequestID {
		t.Errorf("a reused id claiming to be generated: %v", err)
	}
	// A per-request price is charged as it is; the two answers delivered above were charged.
	evs, err := generate(as(key, ""), e, chat("m-flat", 0, ptr[int64](5), false))
	if err != nil || evs[len(evs)-1].GetUsage().GetCost() != "0.25" {
		t.Fatalf("per-request answer: %v %v", evs, err)
	}
	b := e.balance(t, p, 3)
	if !b.LessThan(decimal.NewFromInt(10).Sub(decimal.RequireFromString("0.25"))) {
		t.Errorf("balance %s after three charges", b)
	}
}

// Token counting is free and answered by the upstream or the local counter, for a profile
// with a positive balance; at zero it is insufficient_balance, the same request.
func TestCountTokensIsFree(t *testing.T) {
	t.Parallel()
	e := newCoreEnv(t, 1)
	key, p := e.profile(t, "1", []string{"*"}, []string{"*"}, 0, 0)
	poor, poorP := e.profile(t, "0", []string{"*"}, []string{"*"}, 0, 0)
	req := &corev1.GenerateRequest{EndpointFamily: "content.count_tokens", Model: "m-a", Protocol: corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS,
		Messages: []*corev1.Message{{Role: corev1.Role_ROLE_USER, Parts: []*corev1.Part{{Kind: &corev1.Part_Text{Text: "hi"}}}}}}
	n, err := e.core.CountTokens(as(key, ""), &corev1.CountTokensRequest{Request: req})
	if err != nil || n.GetInputTokens() != 7 {
		t.Fatalf("count: %v %v", n, err)
	}
	if _, err := e.core.CountTokens(as(poor, ""), &corev1.CountTokensRequest{Request: req}); code(err) != apierror.InsufficientBalance {
		t.Errorf("count at a zero balance: %v", err)
	}
	if _, err := e.core.CountTokens(as(key, ""), &corev1.CountTokensRequest{Request: &corev1.GenerateRequest{EndpointFamily: "content.count_tokens", Model: "m-b"}}); code(err) != apierror.ModelNotFound {
		t.Errorf("a model that does not count: %v", err)
	}
	if _, err := e.core.CountTokens(as("sk-nope", ""), &corev1.CountTokensRequest{Request: req}); code(err) != apierror.InvalidKey {
		t.Errorf("a bad key: %v", err)
	}
	if b := e.balance(t, p, 0); !b.Equal(decimal.NewFromInt(1)) {
		t.Errorf("balance %s", b)
	}
	if b := e.balance(t, poorP, 0); !b.IsZero() {
		t.Errorf("balance %s", b)
	}
}

// The per-key limits hold on the listener's unary and streaming RPCs that reach an upstream,
// and not on discovery.
func TestKeyLimitsOnTheListener(t *testing.T) {
	t.Parallel()
	e := newCoreEnv(t, 1)
	key, _ := e.profile(t, "10", []string{"*"}, []string{"*"}, 0, 1)
	count := &corev1.CountTokensRequest{Request: &corev1.GenerateRequest{EndpointFamily: "content.count_tokens", Model: "m-a"}}
	if _, err := e.core.CountTokens(as(key, ""), count); err != nil {
		t.Fatalf("the first request: %v", err)
	}
	if _, err := e.core.CountTokens(as(key, ""), count); code(err) != apierror.RateLimited {
		t.Errorf("a second unary request within the second: %v", err)
	}
	if _, err := generate(as(key, ""), e, chat("m-a", 0, ptr[int64](5), false)); code(err) != apierror.RateLimited {
		t.Errorf("a streaming request within the second: %v", err)
	}
	for range 3 {
		if _, err := e.core.ListModels(as(key, ""), &corev1.ListModelsRequest{}); err != nil {
			t.Errorf("discovery is not limited: %v", err)
		}
	}
}
