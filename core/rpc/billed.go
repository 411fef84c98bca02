package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shopspring/decimal"
	"google.golang.org/grpc/metadata"

	"modelgateway/core/billing"
	"modelgateway/core/metering"
	"modelgateway/core/routing"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// billed is one request that passed the key checks: the outcome it is building and its
// money (billing.Request: price, hold, charge). Every priced RPC (Generate, Embed, Forward,
// each realtime response) goes through admit → hold → charge → finish; the money rules live
// in billing.Request, and what the client is told at each step here.
type billed struct {
	s     *CoreServer
	ctx   context.Context
	snap  *snapshot.Snapshot
	k     *snapshot.Key
	m     *snapshot.Model
	out   Outcome
	money billing.Request
	// tokens is the request's count against its key's token limit (countTokens).
	tokens *tokenCount
	// conv names the request's conversation for route affinity (core/routing); 0: none.
	conv routing.Conversation
	// firstAttempt is out.Attempts' first backing array: most requests make one upstream
	// call, which then costs no allocation of its own.
	firstAttempt [1]Attempt
	// run is a streamed answer's count (newRunning), in the request's allocation.
	run running
	// recEnd and recAttempts hold the first record's end time and attempt (record), which
	// its charge keeps until its commit: two allocations per request otherwise. A later
	// record (a realtime session's parts) makes its own.
	recEnd      time.Time
	recAttempts [1]store.AttemptRecord
	recTaken    atomic.Bool
}

// admit authenticates the key, authorizes the family and model, and reserves a client-chosen
// request id (contract: an id is used once the key checks have passed, whatever the outcome;
// the gateway's own ids are unique by construction and cost no database round trip). The
// caller must call finish once admit has succeeded.
//
// With a tokenLimit, the request's worst case in tokens is counted against the key's
// max_tokens_per_minute among the key checks, before the id is taken: a request refused by
// its key's limits may be sent again with the same id, as one refused by the request limits
// (the interceptor's) may.
func (s *CoreServer) admit(ctx context.Context, family, model string, limit ...tokenLimit) (*billed, error) {
	return s.admitAs(ctx, authenticated{}, family, model, limit...)
}

// admitAs is admit of a caller whose key was found already (as), when it was: the key is
// hashed and looked up once per request rather than for the request limits and again here.
func (s *CoreServer) admitAs(ctx context.Context, as authenticated, family, model string, limit ...tokenLimit) (*billed, error) {
	snap, k := as.snap, as.k
	if k == nil {
		var err error
		if snap, k, err = s.caller(ctx); err != nil {
			return nil, err
		}
	}
	m, apiErr := snap.Authorize(k, family, model)
	if apiErr != nil {
		return nil, apiErr
	}
	var tokens *tokenCount
	for _, l := range limit {
		c, md, err := s.Deps.Limiter.countTokens(k, l.estimate(m))
		if md != nil {
			_ = l.setHeader(md) // (fails only once the headers have gone, which they have not)
		}
		if err != nil {
			return nil, err
		}
		tokens = c
	}
	id, generated, idErr := requestID(ctx)
	if idErr != nil {
		tokens.settle(0)
		return nil, idErr
	}
	batchItem := batchItemCall(ctx)
	if batchItem {
		m = batchPriced(m)
	}
	b := &billed{s: s, ctx: ctx, snap: snap, k: k, m: m, tokens: tokens, money: s.Deps.Ledger.NewRequest(k.ProfileID), out: Outcome{
		RequestID: id, KeyID: k.IDText(), KeyPrefix: k.Prefix, ProfileID: k.ProfileText(), Currency: snap.Currency,
		Model: m.ID, EndpointFamily: family, StartTime: time.Now(), Status: store.StatusOK,
		Usage: metering.Unreliable("no upstream answered"),
	}}
	b.out.Attempts = b.firstAttempt[:0]
	if k.Budget != nil {
		b.money.Limit(keyBudget(k), b.out.StartTime)
	}
	if batchItem {
		b.money.BatchItem()
	}
	if !generated {
		dctx, cancel := context.WithTimeout(ctx, s.Deps.Ledger.DBTimeout)
		rec := b.record(&b.out)
		ok, err := s.Store.ReserveRequestID(dctx, &rec, s.Deps.Ledger.Replica)
		cancel()
		if err != nil {
			// Recorded as unavailable once the database is back: the id counts as used.
			b.out.Status = apierror.Unavailable
			b.finish()
			return nil, unavailable(ctx, "reserve request id", err)
		}
		if !ok {
			tokens.settle(0)
			return nil, apierror.New(apierror.DuplicateRequestID, "the request id %q was already used", id)
		}
	}
	return b, nil
}

// refuse records the spec code that refused the request and returns the error.
func (b *billed) refuse(e *apierror.Error) error {
	b.out.Status = e.Code
	return e
}

// checkParameters refuses optional parameters outside the model's verified list for the
// family (spec 2.3, 2.6).
func (b *billed) checkParameters(params []string) error {
	if e := checkParameters(b.m, b.out.EndpointFamily, params); e != nil {
		return b.refuse(e)
	}
	return nil
}

// checkParameters is the verified-parameter check; without a capability entry for the family
// everything passes (unknown is not unsupported).
func checkParameters(m *snapshot.Model, family string, params []string) *apierror.Error {
	c, ok := m.Capabilities[family]
	if !ok {
		return nil
	}
	for _, p := range params {
		if !slices.Contains(c.OptionalParameters, p) {
			return apierror.New(apierror.InvalidRequest, "the parameter %q is not supported by the model %q on %s", p, m.ID, family)
		}
	}
	return nil
}

// holdWorst finds the family's price and holds the worst case it computes: pricing_unavailable
// without a usable rule, insufficient_balance when the balance cannot cover it.
func (b *billed) holdWorst(needsOutput bool, worst func(billing.Price) decimal.Decimal) error {
	amount, err := b.money.HoldWorst(b.ctx, b.m.Prices, b.out.EndpointFamily, needsOutput, worst)
	return b.held(amount, err)
}

// holdWorstCase is holdWorst of the price's WorstCase(input, output), worked out without a
// decimal (billing.Request.HoldWorstCase): the hold of every chat, embedding and media
// request.
func (b *billed) holdWorstCase(needsOutput bool, input, output int64) error {
	amount, err := b.money.HoldWorstCase(b.ctx, b.m.Prices, b.out.EndpointFamily, needsOutput, input, output)
	return b.held(amount, err)
}

// held is what the client is told of a hold of amount that ended with err.
func (b *billed) held(amount decimal.Decimal, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, billing.ErrNoPrice):
		return b.refuse(apierror.New(apierror.PricingUnavailable, "the model %q has no price for %s", b.m.ID, b.out.EndpointFamily))
	case errors.Is(err, billing.ErrInsufficient):
		return b.refuse(apierror.New(apierror.InsufficientBalance, "the balance cannot cover this request (up to %s %s)", amount, b.snap.Currency))
	case errors.Is(err, billing.ErrBudgetExceeded):
		return b.refuse(budgetExceeded(err, amount, b.snap.Currency))
	case b.ctx.Err() != nil:
		b.out.Status = store.StatusCancelled
		return err
	}
	ae := unavailable(b.ctx, "hold", err)
	b.out.Status = ae.Code
	return ae
}

// tokenLimit counts a request against its key's max_tokens_per_minute in admit: estimate is
// its worst case in input + output tokens (what its hold is sized for), setHeader sends the
// -tokens headers. The charge (or finish) corrects the count to the reported usage.
type tokenLimit struct {
	estimate  func(m *snapshot.Model) int64
	setHeader func(metadata.MD) error
}

// usedTokens is what a usage counts against max_tokens_per_minute: input + output.
func usedTokens(u metering.Usage) int64 { return u.TotalInput() + u.Output }

// growHold makes the request's hold cover amount (billing.Request.Grow): insufficient_balance
// when the balance cannot cover it (the hold is then unchanged), unavailable when the
// database cannot be reached for it. Every growth of a hold goes through here, so that a
// limit beside the balance (a key's budget) is checked in one place.
func (b *billed) growHold(amount decimal.Decimal) *apierror.Error {
	err := b.money.Grow(b.ctx, amount)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, billing.ErrInsufficient):
		return apierror.New(apierror.InsufficientBalance, "the balance cannot pay for more of this answer (up to %s %s); the answer ends here and is not charged",
			amount, b.snap.Currency)
	case errors.Is(err, billing.ErrBudgetExceeded):
		e := budgetExceeded(err, amount, b.snap.Currency)
		e.Message += "; the answer ends here and is not charged"
		return e
	}
	return unavailable(b.ctx, "grow hold", err)
}

// unavailable is the answer to a request that cannot be decided because the database cannot
// be reached (contract: 503 unavailable); its log line names the request.
func unavailable(ctx context.Context, what string, err error) *apierror.Error {
	slog.Warn("database unreachable", "request_id", RequestID(ctx), "step", what, "err", err)
	return apierror.New(apierror.Unavailable, "the gateway cannot reach its database; retry later")
}

// settle makes the answer's charge durable before the end of the answer goes to the client:
// call it before sending the event that carries the usage (or the body). On failure nothing
// is charged, the request is recorded as unavailable (or insufficient_balance when the
// balance cannot pay the whole cost), and the answer's end must not be sent.
func (b *billed) settle() error {
	if !b.out.Cost.Valid || b.money.Durable() {
		return nil
	}
	b.out.EndTime = time.Now()
	charged, err := b.money.Settle(b.ctx, b.record(&b.out))
	if errors.Is(err, billing.ErrBudgetExceeded) {
		// The usage went beyond the hold and what is left of the key's budget: as for the
		// balance, charged in full or not delivered.
		cost := b.out.Cost.Decimal
		b.uncharged(apierror.BudgetExceeded, "the key's budget cannot pay for the answer's usage")
		e := budgetExceeded(err, cost, b.snap.Currency)
		e.Message += "; the answer was not completed and is not charged"
		return e
	}
	if errors.Is(err, billing.ErrInsufficient) {
		// The usage went beyond the hold and what is free (or, after a partition, the money
		// went to another replica): an answer is charged in full or not delivered, so that
		// nothing is spent beyond the balance and no delivered answer goes uncharged. The
		// ledger gives back whatever a capped commit took.
		cost := b.out.Cost.Decimal
		b.uncharged(apierror.InsufficientBalance, "the balance cannot pay for the answer's usage")
		return apierror.New(apierror.InsufficientBalance, "the balance cannot pay for this answer's usage (%s %s); the answer was not completed and is not charged",
			cost, b.snap.Currency)
	}
	if err != nil {
		// (billing.Request.Settle gave back a commit whose answer was lost.)
		b.uncharged(apierror.Unavailable, "the charge could not be recorded: "+err.Error())
		return apierror.New(apierror.Unavailable, "the gateway cannot record the charge of this answer now; the answer was not completed and is not charged")
	}
	b.out.Cost.Decimal = charged
	return nil
}

// charge prices the answer once its usage is known: reliable usage at the token rates, or the
// fixed price of a complete answer.
func (b *billed) charge(u metering.Usage) {
	if b.money.Settled() {
		return
	}
	b.out.Usage = u
	// Corrected before the answer's end goes out, so that the key's next request sees it.
	b.tokens.settle(usedTokens(u))
	if cost := b.money.Cost(u); cost.Valid {
		b.out.Cost = cost
	}
}

// uncharged marks an answer that must not be charged: cut, failed, or not delivered.
// A charge already durable is given back (billing.Request.Unsettle).
func (b *billed) uncharged(status, why string) {
	b.money.Unsettle(b.out.RequestID, status)
	b.out.Status, b.out.Cost = status, decimal.NullDecimal{}
	b.out.Usage = metering.Unreliable(why)
}

// costString is the charge for the client's headers; empty when nothing is charged. A
// durable charge's text is the one its commit wrote (billing.Request.ChargedText, the same
// digits): formatted again, it was an allocation per answer.
func (b *billed) costString() (cost, currency string) {
	if !b.out.Cost.Valid {
		return "", ""
	}
	if t := b.money.ChargedText(); t != "" && b.money.Durable() {
		return t, b.snap.Currency
	}
	return billing.FormatDecimal(b.out.Cost.Decimal), b.snap.Currency
}

// finish releases the hold and queues the record and its charge for settlement; an answer
// whose charge settle already made durable is only shown to the observer.
func (b *billed) finish() {
	// The reported usage; none when no answer came (the request took no tokens).
	b.tokens.settle(usedTokens(b.out.Usage))
	if b.money.Durable() {
		b.observe(&b.out)
		return
	}
	b.finishWith(&b.out, true)
}

// finishWith is finish for an outcome of the request other than its own (each response of a
// realtime session) too: it queues o's record and charge, and releases the request's hold
// when release is set.
func (b *billed) finishWith(o *Outcome, release bool) {
	o.EndTime = time.Now()
	if release {
		b.money.Finish(b.record(o))
	} else {
		b.money.Queue(b.record(o))
	}
	b.observe(o)
}

// record is an outcome's row in the database: who asked, what for, the usage and the cost.
// A value, not a pointer: its callers copy it (into the ledger's charge), and a pointer
// returned from here was a heap allocation of the whole record per request.
func (b *billed) record(o *Outcome) store.RequestRecord {
	k := b.k
	var end *time.Time
	var room []store.AttemptRecord
	if b.recTaken.CompareAndSwap(false, true) {
		end, room = &b.recEnd, b.recAttempts[:0]
	} else {
		end = new(time.Time)
	}
	*end = o.EndTime
	return store.RequestRecord{
		ProfileID: k.ProfileID, RequestID: o.RequestID, KeyID: k.ID, Model: o.Model, EndpointFamily: o.EndpointFamily,
		Status: o.Status, Currency: o.Currency, InputTokens: o.Usage.Input, CachedInputTokens: o.Usage.CachedInput,
		CacheWriteTokens: o.Usage.CacheWrite, OutputTokens: o.Usage.Output, ReasoningTokens: o.Usage.Reasoning,
		AudioInputTokens: o.Usage.AudioInput, AudioOutputTokens: o.Usage.AudioOutput,
		UsageReliable: o.Usage.Reliable, Cost: o.Cost, StartTime: o.StartTime, EndTime: end,
		Attempts: attemptRecords(room, o.Attempts),
	}
}

// attemptRecords are the request record's attempts (contract.md, "Routing"), in room when
// they fit.
func attemptRecords(room []store.AttemptRecord, as []Attempt) []store.AttemptRecord {
	if len(as) == 0 {
		return nil
	}
	out := room[:0]
	if cap(room) < len(as) {
		out = make([]store.AttemptRecord, len(as))
	}
	out = out[:len(as)]
	for i, a := range as {
		out[i] = store.AttemptRecord{Provider: a.Provider, UpstreamModel: a.UpstreamModel, Status: a.Status,
			ErrorCode: attemptCode(a), DurationMS: a.End.Sub(a.Start).Milliseconds()}
	}
	return out
}

// attemptCode names why an attempt failed, for the request record; empty for the one that
// answered.
func attemptCode(a Attempt) string {
	switch {
	case a.Error == "":
		return ""
	case a.Error == AttemptTimeout:
		return "timeout"
	case a.Status == http.StatusTooManyRequests:
		return "rate_limited"
	case a.Status == http.StatusUnauthorized || a.Status == http.StatusForbidden:
		return "credential_refused"
	case a.Status != 0:
		return "upstream_status"
	}
	return "connection_error"
}

// observe shows an outcome to the observer.
func (b *billed) observe(o *Outcome) {
	if b.s.Deps.Observer != nil {
		// The request's own context, even where the client has gone: observers read its
		// values only (Observer), and a WithoutCancel wrapper costs an allocation on every
		// Value looked up through it besides its own.
		b.s.Deps.Observer.Record(b.ctx, *o)
	}
}

// keyBudget is the key's budget as the ledger holds against it.
func keyBudget(k *snapshot.Key) billing.Budget {
	return billing.Budget{Key: k.ID, Amount: k.Budget.Amount, Period: k.Budget.Period}
}

// budgetExceeded is the 402 of a hold the key's budget cannot cover: the budget, what is left
// of it in the window, and when the window resets (contract: "Keys: limits, budgets, expiry").
func budgetExceeded(err error, amount decimal.Decimal, currency string) *apierror.Error {
	var be *billing.BudgetError
	if !errors.As(err, &be) {
		return apierror.New(apierror.BudgetExceeded, "the key's budget cannot cover this request (up to %s %s)", amount, currency)
	}
	resets := "it does not reset (a TOTAL budget)"
	if !be.ResetsAt.IsZero() {
		resets = "it resets at " + be.ResetsAt.UTC().Format(time.RFC3339)
	}
	per := "per " + strings.ToLower(be.Period)
	if be.ResetsAt.IsZero() {
		per = "in total"
	}
	held := ""
	if be.Held.IsPositive() {
		held = fmt.Sprintf(" (%s %s of it held for requests in flight)", be.Held, currency)
	}
	return apierror.New(apierror.BudgetExceeded, "the key's budget of %s %s %s has %s %s left%s, less than this request may cost (up to %s %s); %s",
		be.Budget, currency, per, be.Left, currency, held, amount, currency, resets)
}
