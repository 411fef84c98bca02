package bot_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"modelgateway/core/gatewaytest"
)

// The chat bot's money (issue 30): a Telegram payment is credited exactly once per charge id
// whatever fails between the bot and the gateway, an update is confirmed to Telegram only
// after its credit is recorded, update ids that go backwards are handled, and operator
// credits are keyed on the operator's message. The bot is the real binary; between it and
// the gateway sits grpcFaults, which breaks admin calls the ways a network and a gateway do.

// grpcFaults is a gRPC proxy in front of the gateway: every call is forwarded as raw bytes,
// except those a scripted fault answers (a status code), cuts (the TCP connections reset, as
// a failing network or a restarting gateway does) or forwards and then cuts (the gateway did
// the work, the answer is lost).
type grpcFaults struct {
	t    testing.TB
	addr string
	up   *grpc.ClientConn

	mu     sync.Mutex
	conns  []net.Conn
	script map[string][]grpcFault
	always map[string]grpcFault
	calls  []faultCall
}

type grpcFault struct {
	code  codes.Code // answered instead of forwarding, unless reset
	reset bool       // reset every connection
	after bool       // forward first, then fail: the call took effect, its answer is lost
}

func (f grpcFault) String() string {
	s := f.code.String()
	if f.reset {
		s = "connection reset"
	}
	if f.after {
		s += " after the call took effect"
	}
	return s
}

// faultCall is one call through the proxy: what was done to it and what the gateway answered.
type faultCall struct {
	Method    string
	Fault     *grpcFault
	Forwarded bool
	Code      codes.Code // the gateway's answer when forwarded
	At        time.Time
}

// rawCodec passes messages through as bytes: the proxy needs no generated types.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

type trackingListener struct {
	net.Listener
	p *grpcFaults
}

func (l trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.p.mu.Lock()
		l.p.conns = append(l.p.conns, c)
		l.p.mu.Unlock()
	}
	return c, err
}

func newGRPCFaults(t testing.TB, gatewayAddr string) *grpcFaults {
	t.Helper()
	up, err := grpc.NewClient(gatewayAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &grpcFaults{t: t, addr: ln.Addr().String(), up: up, script: map[string][]grpcFault{}, always: map[string]grpcFault{}}
	srv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(p.handle))
	go func() { _ = srv.Serve(trackingListener{ln, p}) }()
	t.Cleanup(func() { srv.Stop(); up.Close() })
	return p
}

// fail scripts the next calls of a method (its short name, "CreditProfile") to fail in turn.
func (p *grpcFaults) fail(method string, faults ...grpcFault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.script[method] = append(p.script[method], faults...)
}

// failAlways fails every call of a method until heal.
func (p *grpcFaults) failAlways(method string, f grpcFault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.always[method] = f
}

func (p *grpcFaults) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.script, p.always = map[string][]grpcFault{}, map[string]grpcFault{}
}

func (p *grpcFaults) callsOf(method string) []faultCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []faultCall
	for _, c := range p.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// resetAll resets every connection the proxy accepted (SO_LINGER 0: an RST, not a FIN).
func (p *grpcFaults) resetAll() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = c.Close()
	}
}

func (p *grpcFaults) handle(_ any, ss grpc.ServerStream) error {
	full, _ := grpc.MethodFromServerStream(ss)
	name := path.Base(full)
	var req []byte
	if err := ss.RecvMsg(&req); err != nil {
		return err
	}
	p.mu.Lock()
	var fault *grpcFault
	if f, ok := p.always[name]; ok {
		fault = &f
	} else if fs := p.script[name]; len(fs) > 0 {
		fault, p.script[name] = &fs[0], fs[1:]
	}
	p.mu.Unlock()
	record := func(c faultCall) {
		c.Method, c.Fault, c.At = name, fault, time.Now()
		p.mu.Lock()
		p.calls = append(p.calls, c)
		p.mu.Unlock()
	}
	failNow := func() error {
		if fault.reset {
			p.resetAll()
			return status.Error(codes.Unavailable, "connection reset")
		}
		return status.Error(fault.code, "injected "+fault.code.String())
	}
	if fault != nil && !fault.after {
		record(faultCall{})
		return failNow()
	}
	md, _ := metadata.FromIncomingContext(ss.Context())
	ctx := metadata.NewOutgoingContext(ss.Context(), metadata.MD{"authorization": md.Get("authorization")})
	var resp []byte
	err := p.up.Invoke(ctx, full, &req, &resp, grpc.ForceCodec(rawCodec{}))
	record(faultCall{Forwarded: true, Code: status.Code(err)})
	if fault != nil {
		return failNow()
	}
	if err != nil {
		return err
	}
	return ss.SendMsg(&resp)
}

var (
	faultUnavailable = grpcFault{code: codes.Unavailable}
	faultInternal    = grpcFault{code: codes.Internal}
	faultDeadline    = grpcFault{code: codes.DeadlineExceeded}
	faultUnknown     = grpcFault{code: codes.Unknown}
	faultReset       = grpcFault{reset: true}
	faultLostAnswer  = grpcFault{reset: true, after: true}
)

// paymentUpdate is a successful_payment message of the user, as Telegram sends it.
func (u *tgUser) paymentUpdate(pid, charge string, minor int) map[string]any {
	up := u.messageUpdate("")
	msg := up["message"].(map[string]any)
	delete(msg, "text")
	msg["successful_payment"] = map[string]any{"currency": "RUB", "total_amount": minor, "invoice_payload": "topup:" + pid,
		"telegram_payment_charge_id": charge, "provider_payment_charge_id": "prov-" + charge}
	return up
}

// botMoney is a gateway, the fault proxy in front of its gRPC listener, and a bot talking to
// the fake Telegram through that proxy.
type botMoney struct {
	e      *gatewaytest.Gateway
	faults *grpcFaults
	h      *botHarness
}

func newBotMoney(t *testing.T, extra ...string) *botMoney {
	e := gatewaytest.Start(t, gatewaytest.Options{})
	e.Admin("POST", "/admin/v1/catalog:apply", botCatalog)
	faults := newGRPCFaults(t, e.GRPCAddr)
	h := newBotHarness(t, faults.addr, append([]string{"TELEGRAM_PAYMENT_PROVIDER_TOKEN=prov-token", "GATEWAY_BOT_OPERATORS=777"}, extra...)...)
	return &botMoney{e: e, faults: faults, h: h}
}

// balance checks the ledger invariant (balance = sum of entries, never below zero) and
// returns the balance.
func (m *botMoney) balance(t *testing.T, pid string) decimal.Decimal {
	t.Helper()
	bal, sum, _ := gatewaytest.LedgerOf(t, m.e.Pool(), pid)
	if !bal.Equal(sum) || bal.IsNegative() {
		t.Fatalf("ledger invariant broken: balance %s, sum of entries %s", bal, sum)
	}
	return bal
}

// credits are the ledger entries under an idempotency key.
func (m *botMoney) credits(t *testing.T, pid, key string) []decimal.Decimal {
	t.Helper()
	rows, err := m.e.Pool().Query(context.Background(), `SELECT amount FROM ledger_entries WHERE profile_id = $1 AND idempotency_key = $2`, pid, key)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []decimal.Decimal
	for rows.Next() {
		var a decimal.Decimal
		if err := rows.Scan(&a); err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

// paymentState is the bot's record of a payment in the gateway ("" when none).
func (m *botMoney) paymentState(charge string) string {
	s := sha256.Sum256([]byte(charge))
	_, _, body := m.e.Do("GET", "/admin/v1/bot/state/pay."+hex.EncodeToString(s[:16]), gatewaytest.Bearer(gatewaytest.AdminToken), "")
	v, _ := body["value"].(string)
	return v
}

// kill ends the bot with SIGKILL: nothing it had not recorded survives.
func (h *botHarness) kill() {
	h.t.Helper()
	_ = h.run.cmd.Process.Kill()
	<-h.run.done
	h.run = nil
}

func offsetOf(c tgCall) int64 {
	var off int64
	fmt.Sscan(c.Fields["offset"], &off)
	return off
}

// A payment whose credit fails in every way a call can fail (the gateway unavailable, the
// connection reset, an internal error, a timeout, an unknown error, and a credit that took
// effect but whose answer was lost) is credited exactly once; the payer is told it is kept,
// then credited; Telegram is not told the update was handled until the credit is recorded;
// the same payment delivered again, under its id and under a renumbered one, credits nothing.
func TestBotPaymentCreditedOnceWhateverFails(t *testing.T) {
	t.Parallel()
	m := newBotMoney(t)
	h := m.h
	h.start()
	ann := h.user(101, "Ann")
	mustContain(t, "/start", ann.say("/start").Fields["text"], "Welcome")
	pid := profileByRef(m.e, "tg:101")["id"].(string)
	before := m.balance(t, pid)

	// Every class of failure, three per payment (the backoff doubles per update from a
	// quarter second).
	pay := func(upd map[string]any, want string, failures ...grpcFault) (payID int64) {
		t.Helper()
		m.faults.fail("CreditProfile", failures...)
		callsBefore := len(m.faults.callsOf("CreditProfile"))
		mark := h.tg.mark()
		payID = h.tg.push(upd)
		reply := h.tg.waitCall(mark, "sendMessage", func(c tgCall) bool { return ann.toMe(c) && strings.Contains(c.Fields["text"], "Payment received") })
		mustContain(t, "payment reply", reply.Fields["text"], want)
		calls := m.faults.callsOf("CreditProfile")[callsBefore:]
		if len(calls) != len(failures)+1 {
			t.Fatalf("%d credit calls, want %d (every failure retried, then one more)", len(calls), len(failures)+1)
		}
		var committed time.Time
		for _, c := range calls {
			if c.Forwarded && c.Code == codes.OK {
				committed = c.At
				break
			}
		}
		// The payer heard once that the payment is kept (never "try again"), before the credit.
		kept := 0
		for _, c := range h.tg.callsSince(mark, "sendMessage") {
			if strings.Contains(c.Fields["text"], "cannot be reached") {
				t.Fatalf("the payer was told to try again: %q", c.Fields["text"])
			}
			if strings.Contains(c.Fields["text"], "do not pay again") {
				kept++
				if c.At.After(reply.At) {
					t.Fatal("the notice that the payment is kept came after the credit")
				}
			}
		}
		if kept != min(len(failures), 1) {
			t.Fatalf("%d notices that the payment is kept after %d failures, want one if any", kept, len(failures))
		}
		// Telegram saw the update confirmed only after the credit took effect.
		h.tg.waitConfirmed(payID)
		for _, c := range h.tg.callsSince(mark, "getUpdates") {
			if offsetOf(c) > payID && c.At.Before(committed) {
				t.Fatalf("getUpdates confirmed the payment at %v, before its credit at %v", c.At, committed)
			}
		}
		return payID
	}
	pay(ann.paymentUpdate(pid, "charge-1", 15050), "Payment received: 150.5 RUB", faultUnavailable, faultReset, faultInternal)
	if got := m.credits(t, pid, "tg-payment:charge-1"); len(got) != 1 || !got[0].Equal(decimal.RequireFromString("150.5")) {
		t.Fatalf("ledger entries of the charge: %v, want one of 150.5", got)
	}
	if d := m.balance(t, pid).Sub(before); !d.Equal(decimal.RequireFromString("150.5")) {
		t.Fatalf("credited %s, want 150.5", d)
	}
	if st := m.paymentState("charge-1"); !strings.Contains(st, `"state":"credited"`) || !strings.Contains(st, `"amount":"150.5"`) {
		t.Fatalf("payment record: %s", st)
	}
	// The last failure here is a credit that took effect while its answer was lost.
	pay(ann.paymentUpdate(pid, "charge-2", 1000), "Payment received: 10 RUB", faultDeadline, faultUnknown, faultLostAnswer)
	if got := m.credits(t, pid, "tg-payment:charge-2"); len(got) != 1 {
		t.Fatalf("ledger entries of a credit retried after its answer was lost: %v", got)
	}
	if d := m.balance(t, pid).Sub(before); !d.Equal(decimal.RequireFromString("160.5")) {
		t.Fatalf("credited %s in all, want 160.5", d)
	}

	// Delivered again under its id; then, after Telegram renumbered, the same update under a
	// new, lower id, and a new message carrying the same charge: nothing more is credited,
	// while a renumbered command is handled.
	upd := ann.paymentUpdate(pid, "charge-3", 1000)
	id3 := pay(upd, "Payment received: 10 RUB")
	h.tg.redeliver(id3, upd)
	h.tg.renumber(7)
	h.tg.push(upd)
	h.tg.push(ann.paymentUpdate(pid, "charge-3", 1000))
	mustContain(t, "/balance after renumbering", ann.say("/balance").Fields["text"], "Balance: <b>170.5 RUB</b>")
	if got := m.credits(t, pid, "tg-payment:charge-3"); len(got) != 1 {
		t.Fatalf("ledger entries of a payment delivered four times: %v", got)
	}
	if d := m.balance(t, pid).Sub(before); !d.Equal(decimal.RequireFromString("170.5")) {
		t.Fatalf("credited %s in all, want 170.5", d)
	}
	h.stop()
	mustContain(t, "bot log", h.out.String(), `"outcome":"replay_skipped"`, `"outcome":"gateway_unavailable","error":"Internal"`)
}

// The bot is killed while the credit fails: the payment was not confirmed to Telegram, so it
// comes again to the restarted bot, which credits it once.
func TestBotPaymentRedeliveredAfterKillBeforeCredit(t *testing.T) {
	t.Parallel()
	m := newBotMoney(t)
	h := m.h
	h.start()
	ann := h.user(101, "Ann")
	ann.say("/start")
	pid := profileByRef(m.e, "tg:101")["id"].(string)

	m.faults.failAlways("CreditProfile", faultInternal)
	mark := h.tg.mark()
	payID := h.tg.push(ann.paymentUpdate(pid, "charge-k", 500))
	gatewaytest.WaitFor(t, 10*time.Second, "two failed credits", func() bool { return len(m.faults.callsOf("CreditProfile")) >= 2 })
	h.kill()
	for _, c := range h.tg.callsSince(mark, "getUpdates") {
		if offsetOf(c) > payID {
			t.Fatalf("getUpdates confirmed the payment (offset %d) while its credit failed", offsetOf(c))
		}
	}
	if h.tg.queued() == 0 || len(m.credits(t, pid, "tg-payment:charge-k")) != 0 {
		t.Fatalf("queued %d, credits %v: the payment must be pending at Telegram, uncredited", h.tg.queued(), m.credits(t, pid, "tg-payment:charge-k"))
	}

	m.faults.heal()
	mark = h.tg.mark()
	h.start()
	h.tg.waitCall(mark, "sendMessage", func(c tgCall) bool { return strings.Contains(c.Fields["text"], "Payment received: 5 RUB") })
	h.tg.waitConfirmed(payID)
	if got := m.credits(t, pid, "tg-payment:charge-k"); len(got) != 1 || !m.balance(t, pid).Equal(decimal.NewFromInt(5)) {
		t.Fatalf("credits %v, balance %s after the restart; want one credit of 5", got, m.balance(t, pid))
	}
}

// A payment the gateway refuses for good (here: another currency than the balance's) is not
// retried forever nor dropped: it is recorded pending, logged, and told to the operators and
// the payer; the next update is handled.
func TestBotPaymentRefusedForGoodIsKeptPending(t *testing.T) {
	t.Parallel()
	m := newBotMoney(t)
	h := m.h
	h.start()
	ann, op := h.user(101, "Ann"), h.user(777, "Op")
	ann.say("/start")
	pid := profileByRef(m.e, "tg:101")["id"].(string)
	upd := ann.paymentUpdate(pid, "charge-usd", 700)
	upd["message"].(map[string]any)["successful_payment"].(map[string]any)["currency"] = "USD"
	mark := h.tg.mark()
	h.tg.push(upd)
	toOp := h.tg.waitCall(mark, "sendMessage", op.toMe)
	mustContain(t, "operator notice", toOp.Fields["text"], "could not be credited", "<code>101</code>", "7 USD", "charge-usd")
	mustContain(t, "payer notice", h.tg.waitCall(mark, "sendMessage", ann.toMe).Fields["text"], "recorded", "do not pay again")
	mustContain(t, "/balance", ann.say("/balance").Fields["text"], "Balance: <b>0 RUB</b>")
	if st := m.paymentState("charge-usd"); !strings.Contains(st, `"state":"pending"`) || !strings.Contains(st, `"currency":"USD"`) {
		t.Fatalf("payment record: %s", st)
	}
	m.balance(t, pid)
	h.stop()
	mustContain(t, "bot log", h.out.String(), `"level":"ERROR","msg":"payment not credited`)
}

// waitOffset waits for a poll after mark whose offset is exactly want: the bot confirmed the
// update before it, whatever the numbering.
func (f *fakeTelegram) waitOffset(mark int, want int64) {
	f.t.Helper()
	f.waitCall(mark, "getUpdates", func(c tgCall) bool { return offsetOf(c) == want })
}

// Telegram renumbers: updates whose ids are below the last one handled are handled, not
// dropped, and confirmed by an offset that follows the ids down; a redelivery of one of them
// is still recognised.
func TestBotUpdateIdsGoingBackwards(t *testing.T) {
	t.Parallel()
	m := newBotMoney(t)
	h := m.h
	h.start()
	ann := h.user(101, "Ann")
	mark := h.tg.mark()
	mustContain(t, "/start", ann.say("/start").Fields["text"], "Welcome")
	h.tg.waitOffset(mark, 1002)

	h.tg.renumber(5)
	mark = h.tg.mark()
	upd := ann.messageUpdate("/help")
	if id := h.tg.push(upd); id != 5 {
		t.Fatalf("renumbered id %d", id)
	}
	mustContain(t, "/help after renumbering", h.tg.waitCall(mark, "sendMessage", ann.toMe).Fields["text"], "Commands")
	h.tg.waitOffset(mark, 6)
	mustContain(t, "/balance after renumbering", ann.say("/balance").Fields["text"], "Balance")
	mark = h.tg.mark()
	h.tg.redeliver(5, upd)
	ann.say("/balance")
	if got := h.tg.callsSince(mark, "sendMessage"); len(got) != 1 {
		t.Fatalf("after a redelivered /help: %v", h.tg.methodsSince(mark))
	}
}

// The webhook: a renumbered update is handled; a payment whose credit fails is answered 503
// (Telegram delivers it again) until its credit is recorded, then 200, credited once.
func TestBotWebhookRenumberedAndPaymentUnacknowledged(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	m := newBotMoney(t, "GATEWAY_BOT_WEBHOOK_URL=http://"+addr+"/hook", "GATEWAY_BOT_WEBHOOK_ADDR="+addr)
	h := m.h
	mark := h.tg.mark()
	h.start()
	h.tg.waitCall(mark, "setWebhook", nil)
	ann := h.user(101, "Ann")
	mark = h.tg.mark()
	if code := h.tg.deliver(9000, ann.messageUpdate("/start"), ""); code != 200 {
		t.Fatalf("delivery: %d", code)
	}
	mustContain(t, "/start", h.tg.waitCall(mark, "sendMessage", ann.toMe).Fields["text"], "Welcome")
	mark = h.tg.mark()
	if code := h.tg.deliver(3, ann.messageUpdate("/help"), ""); code != 200 {
		t.Fatalf("renumbered delivery: %d", code)
	}
	mustContain(t, "/help with a lower id", h.tg.waitCall(mark, "sendMessage", ann.toMe).Fields["text"], "Commands")

	pid := profileByRef(m.e, "tg:101")["id"].(string)
	pay := ann.paymentUpdate(pid, "charge-w", 2500)
	m.faults.fail("CreditProfile", faultInternal, faultReset, faultLostAnswer)
	for i := range 3 {
		if code := h.tg.deliver(4, pay, ""); code != 503 {
			t.Fatalf("delivery %d of a payment whose credit fails: %d, want 503", i+1, code)
		}
	}
	if got := m.credits(t, pid, "tg-payment:charge-w"); len(got) != 1 {
		t.Fatalf("the answer-lost credit: %v", got)
	}
	mark = h.tg.mark()
	if code := h.tg.deliver(4, pay, ""); code != 200 {
		t.Fatalf("delivery once the credit goes through: %d", code)
	}
	mustContain(t, "payment reply", h.tg.waitCall(mark, "sendMessage", func(c tgCall) bool { return strings.Contains(c.Fields["text"], "Payment") }).Fields["text"], "Payment received: 25 RUB")
	if code := h.tg.deliver(4, pay, ""); code != 200 {
		t.Fatalf("redelivery: %d", code)
	}
	if got := m.credits(t, pid, "tg-payment:charge-w"); len(got) != 1 || !m.balance(t, pid).Equal(decimal.NewFromInt(25)) {
		t.Fatalf("credits %v, balance %s", got, m.balance(t, pid))
	}
}

// An operator's /credit is keyed on the operator's message: the bot killed after crediting
// but before recording the update, and the message then redelivered under a renumbered id
// (here a higher one), credits once; a second message is a second credit.
func TestBotOperatorCreditOncePerMessage(t *testing.T) {
	t.Parallel()
	m := newBotMoney(t)
	h := m.h
	h.start()
	ann, op := h.user(101, "Ann"), h.user(777, "Op")
	mark := h.tg.mark()
	ann.say("/start")
	pid := profileByRef(m.e, "tg:101")["id"].(string)
	h.tg.waitOffset(mark, 1002) // recorded: the faults below are for the operator's update

	upd := op.messageUpdate("/credit 101 100")
	msgID := upd["message"].(map[string]any)["message_id"]
	m.faults.failAlways("PutBotState", faultInternal)
	h.tg.push(upd)
	gatewaytest.WaitFor(t, 10*time.Second, "a credit, then a failed record of the update", func() bool {
		return len(m.faults.callsOf("CreditProfile")) >= 1 && len(m.faults.callsOf("PutBotState")) >= 1
	})
	h.kill()
	if b := m.balance(t, pid); !b.Equal(decimal.NewFromInt(100)) {
		t.Fatalf("balance %s after the first delivery, want 100", b)
	}
	m.faults.heal()
	h.tg.renumberQueue(5000) // a random renumbering may go up as well as down
	mark = h.tg.mark()
	h.start()
	h.tg.waitCall(mark, "sendMessage", op.toMe)
	key := fmt.Sprintf("tg-credit:777:%v", msgID)
	if b := m.balance(t, pid); !b.Equal(decimal.NewFromInt(100)) || len(m.credits(t, pid, key)) != 1 {
		t.Fatalf("balance %s after the redelivery, credits under %s: %v; want 100, one", b, key, m.credits(t, pid, key))
	}
	mustContain(t, "second /credit", op.say("/credit 101 100").Fields["text"], "Balance: <b>200 RUB</b>")
	m.balance(t, pid)
}
