package verify_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/tidwall/gjson"

	"modelgateway/core/provider"
	"modelgateway/core/provider/anthropic"
	"modelgateway/core/provider/gemini"
	"modelgateway/core/provider/openai"
	"modelgateway/core/simulator"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/verify"
	"modelgateway/core/wire/apierror"
)

var adapters = map[string]provider.Adapter{"openai": openai.Adapter{}, "anthropic": anthropic.Adapter{}, "gemini": gemini.Adapter{}}

// upstream is a fake provider: the simulator, behind a filter that answers 400 with the
// protocol's error body when the request carries one of the rejected fields (gjson paths).
type upstream struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

func newUpstream(t *testing.T, rejectBody string, rejected ...string) *upstream {
	t.Helper()
	sim := simulator.New(simulator.Options{Words: 3})
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.bodies = append(u.bodies, body)
		u.mu.Unlock()
		for _, path := range rejected {
			if gjson.GetBytes(body, path).Exists() {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, rejectBody, path)
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) sent() [][]byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([][]byte(nil), u.bodies...)
}

const (
	openAIReject    = `{"error":{"message":"Unrecognized request argument supplied: %s","type":"invalid_request_error","param":null,"code":null}}`
	anthropicReject = `{"type":"error","error":{"type":"invalid_request_error","message":"%s: Extra inputs are not permitted"}}`
)

type route struct {
	families []string
	kind     string
	baseURL  string
}

// snap builds a one-model snapshot whose routes go to the given providers, in order.
func snap(t *testing.T, streaming bool, routes ...route) *snapshot.Snapshot {
	t.Helper()
	d := &store.CatalogData{
		Currency: "RUB",
		Families: []store.Family{{ID: "fam", Active: true}},
		Models:   []store.Model{{ID: "m1", Family: "fam", Active: true, Streaming: streaming}, {ID: "off", Family: "fam", Active: false, Streaming: true}},
	}
	for i, r := range routes {
		id := fmt.Sprintf("p%d", i)
		d.Providers = append(d.Providers, store.Provider{ID: id, Kind: r.kind, BaseURL: r.baseURL, APIKeyEnv: "KEY_" + id, Active: true})
		d.Routes = append(d.Routes, store.Route{ModelID: "m1", Position: i, EndpointFamilies: r.families, ProviderID: id, UpstreamModel: "up-" + id})
	}
	return snapshot.Build(d, time.Now())
}

var fixed = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func prober() *verify.Prober {
	return &verify.Prober{Adapters: adapters, Env: func(string) string { return "sk-test" }, RetryDelay: time.Millisecond, Now: func() time.Time { return fixed }}
}

// ignoreReasons leaves the operator-facing error texts out of comparisons.
var ignoreReasons = cmpopts.IgnoreFields(verify.Result{}, "Reasons", "Err")

func TestVerifyRecordsWhatTheUpstreamAccepts(t *testing.T) {
	t.Parallel()
	oa := newUpstream(t, openAIReject, "top_p", "logprobs")
	an := newUpstream(t, anthropicReject, "top_p")
	s := snap(t, true,
		route{families: []string{"chat.completions"}, kind: "openai", baseURL: oa.URL + "/v1"},
		route{families: []string{"messages"}, kind: "anthropic", baseURL: an.URL},
	)
	got, err := prober().Verify(context.Background(), s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []verify.Result{{
		Model: "m1", EndpointFamily: "chat.completions", Provider: "p0",
		// n is accepted because the chat translation does not send it (one candidate only).
		Supported:    []string{"temperature", "max_tokens", "frequency_penalty", "presence_penalty", "stop", "seed", "n", "stream", "response_format", "tools", "tool_choice", "user"},
		Unsupported:  []string{"top_p", "logprobs", "top_logprobs"}, // top_logprobs needs logprobs
		Inconclusive: []string{"logit_bias"},
		VerifiedAt:   fixed,
	}, {
		Model: "m1", EndpointFamily: "messages", Provider: "p1",
		// The messages translation drops penalties, seed and logprobs before the upstream
		// sees them, so their probes succeed; n > 1 is refused by the adapter itself.
		Supported:    []string{"temperature", "max_tokens", "frequency_penalty", "presence_penalty", "stop", "seed", "stream", "response_format", "tools", "tool_choice", "logprobs", "top_logprobs", "user"},
		Unsupported:  []string{"top_p", "n"},
		Inconclusive: []string{"logit_bias"},
		VerifiedAt:   fixed,
	}}
	if diff := cmp.Diff(want, got, ignoreReasons); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	for _, r := range got {
		if !r.Recorded() {
			t.Errorf("%s: not recorded: %v", r.EndpointFamily, r.Err)
		}
	}

	// What the anthropic adapter's translated path sent: a messages body with the probe's
	// output limit, one user word, and the parameter in its native spelling.
	var sawStop, sawUser, sawStream bool
	for _, b := range an.sent() {
		if got := gjson.GetBytes(b, "max_tokens").Int(); got != verify.ProbeMaxTokens {
			t.Errorf("anthropic probe max_tokens = %d, want %d: %s", got, verify.ProbeMaxTokens, b)
		}
		if got := gjson.GetBytes(b, "model").String(); got != "up-p1" {
			t.Errorf("anthropic probe model = %q, want the upstream model", got)
		}
		if gjson.GetBytes(b, "messages.#").Int() != 1 {
			t.Errorf("anthropic probe messages: %s", b)
		}
		sawStop = sawStop || gjson.GetBytes(b, "stop_sequences.0").String() == "zzz"
		sawUser = sawUser || gjson.GetBytes(b, "metadata.user_id").String() == "probe"
		sawStream = sawStream || gjson.GetBytes(b, "stream").Bool()
		if gjson.GetBytes(b, "n").Exists() || gjson.GetBytes(b, "seed").Exists() {
			t.Errorf("anthropic probe carries an OpenAI field: %s", b)
		}
	}
	if !sawStop || !sawUser || !sawStream {
		t.Errorf("anthropic probes: stop_sequences %v, metadata.user_id %v, stream %v; want all", sawStop, sawUser, sawStream)
	}
	// The baseline + 14 parameters with a request of their own (max_tokens is the
	// baseline's, logit_bias has no canonical field); n never left the anthropic adapter.
	if n := len(oa.sent()); n != 15 {
		t.Errorf("openai upstream got %d requests, want 15", n)
	}
	if n := len(an.sent()); n != 14 {
		t.Errorf("anthropic upstream got %d requests, want 14", n)
	}
}

func TestFailedBaselineRecordsNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, wantErr string
		status        int
	}{
		{name: "a server error is inconclusive, and retried once", status: http.StatusInternalServerError},
		{name: "a rejected baseline proves nothing about the parameters", status: http.StatusNotFound, wantErr: "rejected the baseline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.WriteHeader(tc.status)
				fmt.Fprint(w, `{"error":{"message":"no","type":"server_error"}}`)
			}))
			defer srv.Close()
			s := snap(t, true, route{families: []string{"chat.completions", "responses"}, kind: "openai", baseURL: srv.URL + "/v1"})
			got, err := prober().Verify(context.Background(), s, []string{"m1"}, []string{"responses"})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].EndpointFamily != "responses" {
				t.Fatalf("results: %+v", got)
			}
			r := got[0]
			if r.Recorded() || r.Err == nil || len(r.Supported) != 0 {
				t.Errorf("recorded %v, err %v, supported %v; want nothing recorded", r.Recorded(), r.Err, r.Supported)
			}
			if diff := cmp.Diff(verify.Parameters, r.Inconclusive); diff != "" {
				t.Errorf("inconclusive (-want +got):\n%s", diff)
			}
			if tc.wantErr != "" && !bytes.Contains([]byte(r.Err.Error()), []byte(tc.wantErr)) {
				t.Errorf("err %q, want it to say %q", r.Err, tc.wantErr)
			}
			want := int32(1)
			if tc.status >= 500 {
				want = 2
			}
			if n := calls.Load(); n != want {
				t.Errorf("upstream got %d requests, want %d: no parameter is probed after a failed baseline", n, want)
			}
		})
	}
}

// Only the first route of a family is probed: the verdict is about the upstream that serves
// the family, not about whichever fallback happens to answer.
func TestOnlyTheFirstRouteIsProbed(t *testing.T) {
	t.Parallel()
	var first atomic.Int32
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer down.Close()
	good := newUpstream(t, openAIReject)
	s := snap(t, true,
		route{families: []string{"chat.completions"}, kind: "openai", baseURL: down.URL + "/v1"},
		route{families: []string{"chat.completions"}, kind: "openai", baseURL: good.URL + "/v1"},
	)
	got, err := prober().Verify(context.Background(), s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Recorded() || got[0].Provider != "p0" {
		t.Fatalf("results: %+v", got)
	}
	if len(good.sent()) != 0 || first.Load() == 0 {
		t.Errorf("first route got %d requests, second %d; want only the first", first.Load(), len(good.sent()))
	}
}

func TestStreamIsUnsupportedWhereTheGatewayCannotStream(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, openAIReject)
	s := snap(t, false, route{families: []string{"chat.completions", "completions"}, kind: "openai", baseURL: up.URL + "/v1"})
	got, err := prober().Verify(context.Background(), s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("results: %+v", got)
	}
	for _, r := range got {
		if diff := cmp.Diff([]string{"stream"}, r.Unsupported); diff != "" {
			t.Errorf("%s unsupported (-want +got):\n%s", r.EndpointFamily, diff)
		}
	}
	for _, b := range up.sent() {
		if gjson.GetBytes(b, "stream").Bool() {
			t.Errorf("a stream was probed on a model that does not stream: %s", b)
		}
	}
}

// counting wraps an adapter and tracks how many of its answers are open at once.
type counting struct {
	provider.Adapter
	inFlight, peak atomic.Int32
}

func (c *counting) Generate(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	n := c.inFlight.Add(1)
	for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
	}
	time.Sleep(5 * time.Millisecond)
	s, err := c.Adapter.Generate(ctx, call)
	if err != nil {
		c.inFlight.Add(-1)
		return nil, err
	}
	return &closing{Stream: s, done: func() { c.inFlight.Add(-1) }}, nil
}

type closing struct {
	provider.Stream
	once sync.Once
	done func()
}

func (c *closing) Close() error {
	c.once.Do(c.done)
	return c.Stream.Close()
}

func TestProbesAreBoundedInConcurrency(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, openAIReject)
	s := snap(t, true, route{families: []string{"chat.completions", "responses", "messages", "content.generate"}, kind: "openai", baseURL: up.URL + "/v1"})
	c := &counting{Adapter: openai.Adapter{}}
	p := prober()
	p.Adapters = map[string]provider.Adapter{"openai": c}
	p.Concurrency = 3
	got, err := p.Verify(context.Background(), s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d results, want 4", len(got))
	}
	for _, r := range got {
		if !r.Recorded() {
			t.Errorf("%s not recorded: %v", r.EndpointFamily, r.Err)
		}
	}
	if pk := c.peak.Load(); pk != 3 {
		t.Errorf("peak concurrency %d, want 3", pk)
	}
}

func TestSlowProbesTimeOutAsInconclusive(t *testing.T) {
	t.Parallel()
	sim := simulator.New(simulator.Options{Words: 2})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if gjson.GetBytes(body, "seed").Exists() {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sim.ServeHTTP(w, r)
	}))
	defer srv.Close()
	s := snap(t, true, route{families: []string{"chat.completions"}, kind: "openai", baseURL: srv.URL + "/v1"})
	p := prober()
	p.Timeout = 200 * time.Millisecond
	got, err := p.Verify(context.Background(), s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"seed", "logit_bias"}, got[0].Inconclusive); diff != "" {
		t.Errorf("inconclusive (-want +got):\n%s", diff)
	}
	if !got[0].Recorded() {
		t.Errorf("not recorded: %v", got[0].Err)
	}
}

// A caller that goes away mid-verification records nothing: the cut probes would otherwise
// read as unsupported.
func TestCancelledVerificationRecordsNothing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sim := simulator.New(simulator.Options{Words: 2})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if gjson.GetBytes(body, "temperature").Exists() {
			cancel()
			<-r.Context().Done()
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sim.ServeHTTP(w, r)
	}))
	defer srv.Close()
	s := snap(t, true, route{families: []string{"chat.completions"}, kind: "openai", baseURL: srv.URL + "/v1"})
	got, err := prober().Verify(ctx, s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Recorded() || !errors.Is(got[0].Err, context.Canceled) {
		t.Errorf("recorded %v, err %v; want nothing recorded", got[0].Recorded(), got[0].Err)
	}
}

func TestTargetsRejectsUnknownNames(t *testing.T) {
	t.Parallel()
	s := snap(t, true, route{families: []string{"chat.completions", "embeddings"}, kind: "openai", baseURL: "http://127.0.0.1:1/v1"})
	for _, tc := range []struct {
		name             string
		models, families []string
		wantCode         string
		wantPairs        int
	}{
		{name: "no filter probes every routed text family", wantPairs: 1},
		{name: "a family the model is not routed on gives no pair", families: []string{"messages"}, wantPairs: 0},
		{name: "a non-text family is refused", families: []string{"embeddings"}, wantCode: apierror.InvalidRequest},
		{name: "an unknown family is refused", families: []string{"chat"}, wantCode: apierror.InvalidRequest},
		{name: "an unknown model is refused", models: []string{"nope"}, wantCode: apierror.NotFound},
		{name: "an inactive model is refused", models: []string{"off"}, wantCode: apierror.NotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := verify.Targets(s, tc.models, tc.families)
			var ae *apierror.Error
			switch {
			case tc.wantCode != "" && (!errors.As(err, &ae) || ae.Code != tc.wantCode):
				t.Fatalf("err %v, want code %s", err, tc.wantCode)
			case tc.wantCode == "" && err != nil:
				t.Fatal(err)
			case len(got) != tc.wantPairs:
				t.Fatalf("%d pairs, want %d", len(got), tc.wantPairs)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want verify.Verdict
	}{
		{"success is support", nil, verify.Supported},
		{"a 400 is a rejection", &provider.Error{Status: 400}, verify.Unsupported},
		{"a 404 is a rejection", &provider.Error{Status: 404}, verify.Unsupported},
		{"a 422 is a rejection", &provider.Error{Status: 422}, verify.Unsupported},
		{"the adapter's own refusal is a rejection", fmt.Errorf("wrapped: %w", apierror.New(apierror.InvalidRequest, "n > 1")), verify.Unsupported},
		{"another local error says nothing", apierror.New(apierror.UpstreamError, "x"), verify.Inconclusive},
		{"a 429 says nothing", &provider.Error{Status: 429, Retryable: true}, verify.Inconclusive},
		{"a 5xx says nothing", &provider.Error{Status: 503, Retryable: true}, verify.Inconclusive},
		{"a refused credential says nothing", &provider.Error{Status: 401}, verify.Inconclusive},
		{"a timeout says nothing", &provider.Error{Timeout: true, Retryable: true}, verify.Inconclusive},
		{"a transport failure says nothing", errors.New("connection refused"), verify.Inconclusive},
	} {
		if got := verify.Classify(tc.err); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
