package rpc

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"time"

	"google.golang.org/protobuf/proto"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/billing"
	"modelgateway/core/provider"
	"modelgateway/core/routing"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/lazyflush"
)

// DefaultMaxTokens is the output limit sent to an upstream protocol that requires one
// (messages) when neither the client nor the model's explicit limit gives one.
const DefaultMaxTokens = billing.DefaultOutputTokens

// Deps is what CoreServer's priced RPCs (Generate, CountTokens, Embed, Forward,
// Realtime) use beyond the snapshot and the store: the provider adapters, the local counters,
// the ledger, the observer and their limits.
type Deps struct {
	// Adapters by provider kind.
	Adapters map[string]provider.Adapter
	// Counter counts tokens locally when the upstream cannot.
	Counter func(req *corev1.GenerateRequest) int64
	// RealtimeSessionsPerKey bounds the realtime sessions of one key on this replica;
	// DefaultRealtimeSessionsPerKey when 0.
	RealtimeSessionsPerKey int
	// RealtimeMaxSession ends a realtime session after this long (close 1008); 0: no limit.
	RealtimeMaxSession time.Duration
	// TextCounter measures texts whose upstream reports no usage (embeddings, moderations).
	TextCounter func(texts []string) int64
	// Ledger holds and charges; every generation goes through it.
	Ledger *billing.Ledger
	// Limiter counts the tokens of generations, embeddings, forwarded (media) requests and
	// realtime responses against their keys' token limits (the request limits are its
	// interceptors'); nil: no token limits.
	Limiter  *KeyLimiter
	Observer Observer
	Log      *slog.Logger
	// Env reads provider credentials; os.Getenv when nil.
	Env func(string) string
	// ResponsesTTL is how long a stored response is kept (GATEWAY_RESPONSES_TTL);
	// DefaultResponsesTTL when 0.
	ResponsesTTL time.Duration
	// Batches are the files and batches limits and clock (batchfiles.go).
	Batches BatchConfig
	// Health is the replica's memory of its routes and credentials (core/routing); one
	// shared by every server of the process when nil.
	Health *routing.Health
}

// sharedHealth serves Deps that name no Health (tests that build Deps themselves).
var sharedHealth = routing.NewHealth()

func (g *Deps) health() *routing.Health {
	if g.Health != nil {
		return g.Health
	}
	return sharedHealth
}

// Generate implements the streaming RPC: checks, price and hold, the upstream call, and the
// charge of reliable usage, exactly once, when the answer has been delivered.
func (s *CoreServer) Generate(req *corev1.GenerateRequest, srv corev1.CoreService_GenerateServer) error {
	return s.generate(req, srv, authenticated{})
}

// generate is Generate of a caller whose key was found already (as), when it was.
func (s *CoreServer) generate(req *corev1.GenerateRequest, srv corev1.CoreService_GenerateServer, as authenticated) error {
	ctx := srv.Context()
	input := billing.InputEstimate(upstreamSize(req)) + mediaEstimate(req)
	b, err := s.admitAs(ctx, as, req.GetEndpointFamily(), req.GetModel(), tokenLimit{
		estimate:  func(m *snapshot.Model) int64 { return input + outputLimit(m, req) },
		setHeader: srv.SetHeader,
	})
	if err != nil {
		return err
	}
	defer b.finish()
	m, out := b.m, &b.out
	if apiErr := checkRequest(m, req); apiErr != nil {
		return b.refuse(apiErr)
	}
	if err := b.checkParameters(req.GetParameters()); err != nil {
		return err
	}
	limit := outputLimit(m, req)
	if err := b.holdWorstCase(true, input, limit); err != nil {
		return err
	}
	// A streamed answer's usage is counted as it passes, and its hold grows ahead of it
	// (running.go). A non-streamed one reaches nobody before its charge is durable: its
	// events wait in held until then, so that an answer the balance cannot pay is not
	// delivered at all (the HTTP fronts hold it too; a gRPC caller would not).
	var run *running
	// heldRoom is held's first backing array: a non-streamed answer is a few events (start,
	// content, finish), which then cost no allocation of their own.
	var heldRoom [4]*corev1.GenerateEvent
	held := heldRoom[:0]
	var sent bool // an event has gone to the caller
	var cut error // the answer ended before anything was sent
	if req.GetStream() {
		run = b.newRunning(input, limit)
	}

	b.conv = conversation(b.k, req)
	stream, first, n, err := s.open(b, req)
	head := first[:n]
	if err != nil {
		out.Status = store.StatusUpstreamError
		return err
	}
	defer stream.Close()
	s.Deps.startInput(req, head) // startinput.go

	// fail ends an answer that cannot go on: its charge could not be made durable, the
	// profile cannot pay for more of it, or the upstream failed. Its end is not delivered, so
	// it stays a cut answer and is not charged. Once Start has gone the front renders the
	// protocol's error event; before (nothing sent yet: a non-streamed answer is held until
	// its charge is durable) it is the call's own error, which the front answers with its
	// status.
	fail := func(err error) {
		ae := upstreamError(err)
		if !sent {
			cut = ae
			return
		}
		_ = srv.Send(&corev1.GenerateEvent{Event: &corev1.GenerateEvent_Error{Error: &corev1.StreamError{Code: ae.Code, Message: ae.Message}}})
	}
	// A streamed answer's events are flushed when the gateway waits (core/wire/lazyflush):
	// before the wait for the durable charge, what the client has not yet been sent goes out,
	// all but the end of the answer. A client that has gone is not charged.
	flush := lazyflush.From(ctx)
	if run != nil {
		run.flush = flush // flushed before a growth of the hold may wait (running.go)
	}
	flushed := func() bool {
		if err := flush.BeforeWait(); err != nil {
			b.uncharged(store.StatusCancelled, "client went away: "+err.Error())
			return false
		}
		return true
	}
	deliver := func(ev *corev1.GenerateEvent) bool {
		if out.FirstByteTime.IsZero() {
			out.FirstByteTime = time.Now()
		}
		sent = true
		if err := srv.Send(ev); err != nil {
			// Gone before the terminal usage was delivered: nothing may be charged.
			b.uncharged(store.StatusCancelled, "client went away: "+err.Error())
			return false
		}
		return true
	}
	// release sends what a non-streamed answer held back, once its charge is durable.
	release := func() bool {
		for _, ev := range held {
			if !deliver(ev) {
				return false
			}
		}
		held = nil
		return true
	}
	send := func(ev *corev1.GenerateEvent) bool {
		if u := ev.GetUsage(); u != nil {
			// Only the stream's last event carries usage; price it for the client's headers,
			// and make the charge durable before the client can see the end of the answer.
			if !flushed() {
				return false
			}
			b.charge(stream.Usage())
			if err := b.settle(); err != nil {
				fail(err)
				return false
			}
			u.Cost, u.Currency = b.costString()
			return release() && deliver(ev)
		}
		if !req.GetStream() {
			held = append(held, ev)
			return true
		}
		if err := run.pass(ev); err != nil {
			// The profile cannot pay for this event: the answer ends before it, cut and
			// uncharged (spec 8: an answer without its usage is not charged).
			b.uncharged(err.Code, err.Message)
			fail(err)
			return false
		}
		return deliver(ev)
	}
	for _, ev := range head {
		if !send(ev) {
			return cut
		}
	}
	for {
		ev, err := stream.Next()
		if errors.Is(err, io.EOF) {
			// A priced answer without a usage event (per-request price): durable before the
			// front writes the end.
			if !flushed() {
				return nil
			}
			b.charge(stream.Usage())
			if err := b.settle(); err != nil {
				fail(err)
				return cut
			}
			release()
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				b.uncharged(store.StatusCancelled, "stream failed: "+err.Error())
				return nil
			}
			b.uncharged(store.StatusUpstreamError, "stream failed: "+err.Error())
			fail(err)
			return cut
		}
		if !send(ev) {
			return cut
		}
	}
}

// conversation names the request's conversation for route affinity (contract.md,
// "Routing"): prompt_cache_key, else the end-user label (user, metadata.user_id,
// safety_identifier: the fronts put each in User), else the key with the first system or
// user message. Hashed from what the front decoded: the body is not read again.
func conversation(k *snapshot.Key, req *corev1.GenerateRequest) routing.Conversation {
	switch {
	case req.GetPromptCacheKey() != "":
		return routing.ConversationOf("c", req.GetPromptCacheKey())
	case req.GetUser() != "":
		return routing.ConversationOf("u", req.GetUser())
	}
	first := req.GetSystem()
	if first == "" {
		for _, m := range req.GetMessages() {
			if m.GetRole() != corev1.Role_ROLE_USER {
				continue
			}
			for _, p := range m.GetParts() {
				if t := p.GetText(); t != "" {
					first = t
					break
				}
			}
			break
		}
	}
	if first == "" {
		return 0
	}
	return routing.ConversationOf("k", k.IDText(), first)
}

// upstreamSize is the size behind a hold's input estimate: the larger of the raw body (sent
// as it is to an upstream of the client's protocol) and the structured request (translated
// for any other), so that a gRPC caller cannot shrink its hold with a small raw body.
func upstreamSize(req *corev1.GenerateRequest) int {
	raw := len(req.GetRawBody())
	return max(raw, proto.Size(req)-raw)
}

// outputLimit is the output side of a hold: the request's limit, else the model's, else the
// default the translating adapters also send; times the number of answers asked for (n,
// candidateCount), each of which may reach the limit and all of which the upstream bills.
func outputLimit(m *snapshot.Model, req *corev1.GenerateRequest) int64 {
	limit := int64(billing.DefaultOutputTokens)
	switch {
	case req.MaxOutputTokens != nil:
		limit = req.GetMaxOutputTokens()
	case m.OutputTokenLimit != nil:
		limit = int64(*m.OutputTokenLimit)
	}
	if n := int64(req.GetN()); n > 1 {
		if limit > math.MaxInt64/n {
			return math.MaxInt64 // priced as more than any balance (billing.WorstCase)
		}
		limit *= n
	}
	return limit
}

// open tries the model's routes for the family in order and returns the first stream that
// produced its Start event and its first upstream event. Another route is tried only on a
// retryable failure, and only here: nothing has reached the client yet, and an upstream that
// answers its headers but then nothing within the first-byte timeout is still a timeout.
// The head comes back as an array and its length, not a slice: no allocation of its own.
func (s *CoreServer) open(b *billed, req *corev1.GenerateRequest) (provider.Stream, [2]*corev1.GenerateEvent, int, error) {
	type opened struct {
		stream provider.Stream
		head   [2]*corev1.GenerateEvent
		n      int
	}
	o, _, err := firstAnswer(b, always, func(a provider.Adapter, up provider.Upstream) (opened, error) {
		stream, err := a.Generate(b.ctx, s.Deps.call(b.m, up, req))
		if err != nil {
			return opened{}, err
		}
		head, n, err := firstEvents(stream)
		if err != nil {
			stream.Close()
			return opened{}, err
		}
		return opened{stream, head, n}, nil
	})
	return o.stream, o.head, o.n, err
}

// firstEvents reads the Start event and the first event after it: head[:n].
func firstEvents(stream provider.Stream) (head [2]*corev1.GenerateEvent, n int, err error) {
	start, err := stream.Next()
	if errors.Is(err, io.EOF) {
		return head, 0, &provider.Error{Message: "the upstream answered with an empty stream", Retryable: true}
	}
	if err != nil {
		return head, 0, err
	}
	if start.GetStart() == nil {
		return head, 0, &provider.Error{Message: "the adapter did not start its stream"}
	}
	head[0] = start
	next, err := stream.Next()
	if errors.Is(err, io.EOF) {
		return head, 1, nil
	}
	if err != nil {
		return head, 0, err
	}
	head[1] = next
	return head, 2, nil
}

func (g *Deps) call(m *snapshot.Model, up provider.Upstream, req *corev1.GenerateRequest) *provider.Call {
	return routing.Call(m, up, req, DefaultMaxTokens)
}

// upstreamError is the one map from upstream failures to spec errors: timeouts are
// upstream_timeout; 429 and 400-class answers keep their status so that clients back off or
// fix the request; everything else is 502.
func upstreamError(err error) *apierror.Error {
	var ae *apierror.Error
	if errors.As(err, &ae) {
		return ae
	}
	var pe *provider.Error
	if !errors.As(err, &pe) {
		return apierror.New(apierror.UpstreamError, "the upstream failed")
	}
	if pe.Timeout {
		return apierror.New(apierror.UpstreamTimeout, "%s", provider.Redact(pe.Message))
	}
	e := apierror.New(apierror.UpstreamError, "%s", provider.Redact(pe.Message))
	switch {
	case pe.Status == http.StatusTooManyRequests:
		e.Status = http.StatusTooManyRequests
	case pe.Status >= 400 && pe.Status < 500 && pe.Status != http.StatusUnauthorized && pe.Status != http.StatusForbidden:
		e.Status = http.StatusBadRequest
	}
	return e
}

// checkRequest applies the model's catalogue limits: streaming and the explicit output limit
// (spec 8).
func checkRequest(m *snapshot.Model, req *corev1.GenerateRequest) *apierror.Error {
	if req.GetStream() && !m.Streaming {
		return apierror.New(apierror.StreamingNotSupported, "the model %q does not stream", m.ID)
	}
	if req.MaxOutputTokens != nil && m.OutputTokenLimit != nil && req.GetMaxOutputTokens() > int64(*m.OutputTokenLimit) {
		return apierror.New(apierror.InvalidRequest, "the output limit %d is above the model's limit of %d tokens", req.GetMaxOutputTokens(), *m.OutputTokenLimit)
	}
	return nil
}

// CountTokens implements the counting RPC (count.go).
func (s *CoreServer) CountTokens(ctx context.Context, creq *corev1.CountTokensRequest) (*corev1.CountTokensResponse, error) {
	return s.countTokensRPC(ctx, creq.GetRequest())
}
