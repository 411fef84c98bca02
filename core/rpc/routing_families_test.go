package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/simulator"
)

// routingFamiliesCatalog gives each family that is not a generation (realtime, forwarded
// media, token counting) a provider with a pool of two credentials and one with a single
// credential, each behind its own path of the stub (/<provider>/...), each retried 3 times.
const routingFamiliesCatalog = `
currency: RUB
families: [{id: fam}]
providers:
  - {id: rp, kind: openai, base_url: "%[1]s/rp/v1", api_key_env: [K1, K2], retry: {attempts: 3, backoff: 10ms}}
  - {id: ro, kind: openai, base_url: "%[1]s/ro/v1", api_key_env: K3, retry: {attempts: 3, backoff: 10ms}}
  - {id: fp, kind: openai, base_url: "%[1]s/fp/v1", api_key_env: [K1, K2], retry: {attempts: 3, backoff: 10ms}}
  - {id: fo, kind: openai, base_url: "%[1]s/fo/v1", api_key_env: K3, retry: {attempts: 3, backoff: 10ms}}
  - {id: cp, kind: anthropic, base_url: "%[1]s/cp", api_key_env: [K1, K2], retry: {attempts: 3, backoff: 10ms}}
  - {id: co, kind: anthropic, base_url: "%[1]s/co", api_key_env: K3, retry: {attempts: 3, backoff: 10ms}}
models:
  - {id: rt-pool, family: fam, routes: [{endpoint_families: [realtime], provider: rp}],
     prices: [{endpoint_families: [realtime], billing_mode: per_token, input: "0.001", output: "0.001"}]}
  - {id: rt-one, family: fam, routes: [{endpoint_families: [realtime], provider: ro}],
     prices: [{endpoint_families: [realtime], billing_mode: per_token, input: "0.001", output: "0.001"}]}
  - {id: img-pool, family: fam, routes: [{endpoint_families: [images.generations], provider: fp, upstream_model: gpt-image-1}],
     prices: [{endpoint_families: [images.generations], billing_mode: per_request, request: "0.5"}]}
  - {id: img-one, family: fam, routes: [{endpoint_families: [images.generations], provider: fo, upstream_model: gpt-image-1}],
     prices: [{endpoint_families: [images.generations], billing_mode: per_request, request: "0.5"}]}
  - {id: cnt-pool, family: fam, routes: [{endpoint_families: [content.count_tokens], provider: cp, upstream_model: claude-x}]}
  - {id: cnt-one, family: fam, routes: [{endpoint_families: [content.count_tokens], provider: co, upstream_model: claude-x}]}
`

// routingKeys are the credentials' values, what the stub sees.
var routingKeys = map[string]string{"K1": "key-1", "K2": "key-2", "K3": "key-3"}

// flaky is a stub upstream in front of the simulator: it refuses credentials (401) and fails
// a provider's next requests on demand, and records every call.
type flaky struct {
	sim *simulator.Simulator

	mu      sync.Mutex
	refused map[string]bool
	faults  map[string]*stubFault
	calls   []string // "<provider> <credential>"
}

// stubFault fails a provider's next n requests with status (and retry-after).
type stubFault struct {
	n          int
	status     int
	retryAfter string
}

func newFlaky() *flaky {
	return &flaky{sim: simulator.New(simulator.Options{Words: 3}), refused: map[string]bool{}, faults: map[string]*stubFault{}}
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	prov, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if k := r.Header.Get("X-Api-Key"); k != "" {
		key = k
	}
	f.mu.Lock()
	f.calls = append(f.calls, prov+" "+key)
	refused := f.refused[key]
	var fail *stubFault
	if fl := f.faults[prov]; fl != nil && fl.n > 0 {
		fl.n--
		fail = fl
	}
	f.mu.Unlock()
	switch {
	case refused:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"message":"invalid api key","type":"authentication_error"}}`)
	case fail != nil:
		if fail.retryAfter != "" {
			w.Header().Set("Retry-After", fail.retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(fail.status)
		_, _ = fmt.Fprintf(w, `{"error":{"message":"stub failure %d","type":"api_error"}}`, fail.status)
	default:
		r.URL.Path = "/" + rest
		f.sim.ServeHTTP(w, r)
	}
}

// since returns the calls after the first n, and how many there are in all.
func (f *flaky) since(n int) ([]string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls[n:]...), len(f.calls)
}

func (f *flaky) set(apply func(f *flaky)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	apply(f)
}

// Realtime connects, forwarded (media) requests and token counts go through the routing rules
// of a generation (contract.md, "Routing"): the credentials of a pool in turn, one answering
// 401 set aside while the request goes on with the next; retryable failures retried with
// backoff, a 429's retry-after honoured; every attempt in the request's record.
func TestRoutingRulesOnEveryFamily(t *testing.T) {
	t.Parallel()
	up := newFlaky()
	e := newCoreEnvWith(t, coreOptions{catalog: routingFamiliesCatalog, upstream: up, env: func(k string) string { return routingKeys[k] }})
	key, _ := e.profile(t, "1000", []string{"*"}, []string{"*"}, 0, 0)

	families := []struct {
		name, pool, one   string // the family's models and the stub paths of their providers
		poolPath, onePath string
		// do makes one request of the model with the request id, nil when it was answered.
		do func(t *testing.T, model, requestID string) error
	}{
		{"realtime", "rt-pool", "rt-one", "rp", "ro", func(t *testing.T, model, id string) error {
			s, err := e.openRealtime(t, key, model, id)
			if err == nil {
				s.close()
			}
			return err
		}},
		{"forward", "img-pool", "img-one", "fp", "fo", func(t *testing.T, model, id string) error {
			return e.forwardImage(t, key, model, id)
		}},
		{"count", "cnt-pool", "cnt-one", "cp", "co", func(t *testing.T, model, id string) error {
			n, err := e.core.CountTokens(as(key, id), &corev1.CountTokensRequest{Request: &corev1.GenerateRequest{
				EndpointFamily: "content.count_tokens", Model: model, Protocol: corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS,
				Messages: []*corev1.Message{{Role: corev1.Role_ROLE_USER, Parts: []*corev1.Part{{Kind: &corev1.Part_Text{Text: "hello there"}}}}}}})
			if err == nil && n.GetInputTokens() == 7 {
				return errors.New("counted by the local tokenizer, not the upstream")
			}
			return err
		}},
	}
	for _, fam := range families {
		t.Run(fam.name, func(t *testing.T) {
			// A refused credential: the request goes on with the next one of the pool, and
			// the refused one is set aside: three requests, one refusal in all.
			_, start := up.since(0)
			up.set(func(f *flaky) { f.refused["key-1"] = true })
			for i := range 3 {
				if err := fam.do(t, fam.pool, ""); err != nil {
					t.Fatalf("request %d with key-1 refused: %v", i, err)
				}
			}
			calls, _ := up.since(start)
			if want := fam.poolPath + " key-1"; count(calls, want) != 1 || count(calls, fam.poolPath+" key-2") != 3 || len(calls) != 4 {
				t.Errorf("calls %q: want key-1 once (then set aside) and key-2 for each request", calls)
			}
			up.set(func(f *flaky) { f.refused = map[string]bool{} })

			// Two retryable failures, then the answer: the same route again, each attempt
			// recorded.
			_, start = up.since(0)
			up.set(func(f *flaky) { f.faults[fam.onePath] = &stubFault{n: 2, status: http.StatusServiceUnavailable} })
			id := uuid.NewString()
			if err := fam.do(t, fam.one, id); err != nil {
				t.Fatalf("after two 503s: %v", err)
			}
			if calls, _ := up.since(start); len(calls) != 3 {
				t.Errorf("calls %q, want three", calls)
			}
			if got := e.attemptStatuses(t, id); got != "503,503,200" {
				t.Errorf("recorded attempts %s, want 503,503,200", got)
			}

			// A 429 with retry-after: the retry waits for it.
			up.set(func(f *flaky) {
				f.faults[fam.onePath] = &stubFault{n: 1, status: http.StatusTooManyRequests, retryAfter: "1"}
			})
			began := time.Now()
			if err := fam.do(t, fam.one, ""); err != nil {
				t.Fatalf("after a 429: %v", err)
			}
			if waited := time.Since(began); waited < time.Second {
				t.Errorf("answered %v after a 429 with retry-after 1", waited)
			}

			// Not retryable: passed on at once.
			_, start = up.since(0)
			up.set(func(f *flaky) { f.faults[fam.onePath] = &stubFault{n: 3, status: http.StatusBadRequest} })
			if err := fam.do(t, fam.one, ""); err == nil {
				t.Error("a 400 was not passed on")
			}
			if calls, _ := up.since(start); len(calls) != 1 {
				t.Errorf("calls %q after a 400, want one", calls)
			}
			up.set(func(f *flaky) { f.faults = map[string]*stubFault{} })
		})
	}
}

func count(calls []string, call string) int {
	n := 0
	for _, c := range calls {
		if c == call {
			n++
		}
	}
	return n
}

// attemptStatuses is the statuses of the attempts recorded for the request, once its record
// is written.
func (e *coreEnv) attemptStatuses(t *testing.T, requestID string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := e.ledger.Flush(context.Background()); err != nil { // (records without a charge wait for it)
			t.Fatal(err)
		}
		var statuses *string
		err := e.st.Pool.QueryRow(context.Background(), `
			SELECT string_agg(a->>'status', ',' ORDER BY n) FROM requests, jsonb_array_elements(attempts) WITH ORDINALITY AS x(a, n)
			WHERE request_id = $1`, requestID).Scan(&statuses)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		if statuses != nil {
			return *statuses
		}
		if time.Now().After(deadline) {
			var row string
			_ = e.st.Pool.QueryRow(context.Background(), `SELECT row_to_json(r)::text FROM requests r WHERE request_id = $1`, requestID).Scan(&row)
			t.Fatalf("no attempts recorded for %s: %s", requestID, row)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// forwardImage asks for an image; nil when it was answered.
func (e *coreEnv) forwardImage(t *testing.T, key, model, requestID string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(as(key, requestID), 30*time.Second)
	defer cancel()
	st, err := e.core.Forward(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&corev1.ForwardRequest{Msg: &corev1.ForwardRequest_Head{Head: &corev1.ForwardHead{
		EndpointFamily: "images.generations", Model: model, Body: []byte(`{"model":"` + model + `","prompt":"a cat","quality":"low"}`)}}}); err != nil {
		t.Fatal(err)
	}
	_ = st.CloseSend()
	status := 0
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if h := m.GetHead(); h != nil {
			status = int(h.GetStatus())
		}
	}
	if status != http.StatusOK {
		return fmt.Errorf("status %d", status)
	}
	return nil
}
