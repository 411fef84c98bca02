package rpc

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/billing"
	"modelgateway/core/metering"
	"modelgateway/core/provider"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/callmd"
)

const (
	// DefaultRealtimeSessionsPerKey bounds the sessions one key holds open on one replica.
	DefaultRealtimeSessionsPerKey = 16
	// A session keeps a reserve held that pays for its worst next response: the conversation
	// so far (the last response's input and output) and a full realtime context of new input,
	// and a long answer. When the balance cannot renew it after a response,
	// the session ends.
	realtimeReserveInput  = 32 << 10
	realtimeReserveOutput = 4096
	// realtimeMaxUpstreamMessage bounds one upstream frame (audio deltas are small; a
	// conversation.item.retrieved may carry a whole item).
	realtimeMaxUpstreamMessage = 64 << 20
	// closeGrace is how long a closing side may take to answer the close handshake.
	closeGrace = 5 * time.Second
)

// Close codes the gateway itself ends a session with.
const (
	closeBalance      = websocket.ClosePolicyViolation // 1008
	closeUpstreamLost = websocket.CloseInternalServerErr
)

// Realtime implements the realtime RPC: the open message is checked like any priced request
// (key, family, model, price, a reserve held on the balance, the per-key session limit), the
// upstream session is dialled, and only then is the session opened for the client. Frames
// then flow both ways; every response.done is charged once, by its own usage.
func (s *CoreServer) Realtime(srv corev1.CoreService_RealtimeServer) error {
	ctx := srv.Context()
	first, err := srv.Recv()
	if err != nil {
		return err
	}
	open := first.GetOpen()
	if open == nil {
		return apierror.New(apierror.InvalidRequest, "the first Realtime message must open the session")
	}
	// The key's token limit counts each response's worst case, what its reserve pays for:
	// the first one's here, each next one's when its reserve is held (session.charge).
	b, err := s.admit(ctx, "realtime", open.GetModel(), tokenLimit{
		estimate:  func(*snapshot.Model) int64 { return realtimeReserveInput + realtimeReserveOutput },
		setHeader: srv.SetHeader,
	})
	if err != nil {
		return err
	}
	b.out.Usage = metering.Unreliable("a realtime session is charged per response")
	defer b.finish()
	limit := s.Deps.RealtimeSessionsPerKey
	if limit <= 0 {
		limit = DefaultRealtimeSessionsPerKey
	}
	if !s.sessions.acquire(b.k.ID, limit) {
		return b.refuse(&apierror.Error{Code: apierror.RateLimited, Status: http.StatusTooManyRequests, RetryAfter: 1,
			Message: fmt.Sprintf("the key already has %d realtime sessions open", limit)})
	}
	defer s.sessions.release(b.k.ID)
	reserve := func(p billing.Price) decimal.Decimal { return p.WorstCase(realtimeReserveInput, realtimeReserveOutput) }
	if err := b.holdWorst(true, reserve); err != nil {
		return err
	}
	upstreamModel := b.m.ID
	up, route, err := firstAnswer(b, always, func(a provider.Adapter, u provider.Upstream) (*websocket.Conn, error) {
		d, ok := a.(provider.RealtimeDialer)
		if !ok {
			return nil, errNoAdapter
		}
		return d.DialRealtime(ctx, u, open)
	})
	if err != nil {
		b.out.Status = store.StatusUpstreamError
		return err
	}
	defer up.Close()
	if route.UpstreamModel != "" {
		upstreamModel = route.UpstreamModel
	}
	x := &session{b: b, srv: srv, up: up, upstreamModel: upstreamModel, reserve: reserve(b.money.Price()), started: time.Now()}
	x.run = b.newRunning(realtimeReserveInput, realtimeReserveOutput)
	if err := x.toClient(&corev1.RealtimeResponse{Msg: &corev1.RealtimeResponse_Opened{Opened: &corev1.RealtimeOpened{SessionId: b.out.RequestID}}}); err != nil {
		return nil
	}
	done := make(chan struct{})
	defer close(done)
	go x.watch(ctx, callmd.Bearer(ctx), done)
	go x.fromClient()
	x.fromUpstream()
	return nil
}

// session is one proxied realtime session.
type session struct {
	b             *billed
	srv           corev1.CoreService_RealtimeServer
	up            *websocket.Conn
	upstreamModel string
	reserve       decimal.Decimal
	// run counts the current response's output as its deltas pass (realtime_running.go).
	run *running
	// started is when the current response began to be metered (the previous one's end).
	started time.Time

	// responses counts the session's charged responses: part of each one's record id.
	responses int
	// ended says why the session cannot pay for or admit another response (exhausted):
	// empty for the balance, else the key's budget or its token limit.
	ended string

	sendMu sync.Mutex // the client side has two writers: both loops
	upMu   sync.Mutex // the upstream connection has two writers too
	events atomic.Int64
	closed atomic.Bool // the client has been sent its close frame
}

func (x *session) toClient(m *corev1.RealtimeResponse) error {
	x.sendMu.Lock()
	defer x.sendMu.Unlock()
	return x.srv.Send(m)
}

func (x *session) frameToClient(f *corev1.Frame) error {
	return x.toClient(&corev1.RealtimeResponse{Msg: &corev1.RealtimeResponse_Frame{Frame: f}})
}

// closeClient sends the client its close frame, once, whichever side ends the session first.
func (x *session) closeClient(code int, reason string) {
	if !x.closed.CompareAndSwap(false, true) {
		return
	}
	_ = x.frameToClient(&corev1.Frame{Kind: corev1.FrameKind_FRAME_KIND_CLOSE, CloseCode: int32(code), CloseReason: reason})
}

func (x *session) writeUp(kind int, data []byte) error {
	x.upMu.Lock()
	defer x.upMu.Unlock()
	_ = x.up.SetWriteDeadline(time.Now().Add(provider.RealtimeWriteTimeout))
	return x.up.WriteMessage(kind, data)
}

func (x *session) controlUp(kind int, data []byte) error {
	return x.up.WriteControl(kind, data, time.Now().Add(provider.RealtimeWriteTimeout))
}

// fromClient relays the client's frames upstream until the client side ends. A client that
// goes away without a close handshake takes the upstream connection down with it.
func (x *session) fromClient() {
	for {
		msg, err := x.srv.Recv()
		if err != nil {
			x.up.Close()
			return
		}
		f := msg.GetFrame()
		switch f.GetKind() {
		case corev1.FrameKind_FRAME_KIND_TEXT:
			data, refusal := x.clientEvent(f.GetData())
			if refusal != nil {
				err = x.frameToClient(&corev1.Frame{Kind: corev1.FrameKind_FRAME_KIND_TEXT, Data: refusal})
			} else {
				err = x.writeUp(websocket.TextMessage, data)
			}
		case corev1.FrameKind_FRAME_KIND_BINARY:
			err = x.writeUp(websocket.BinaryMessage, f.GetData())
		case corev1.FrameKind_FRAME_KIND_PING:
			err = x.controlUp(websocket.PingMessage, f.GetData())
		case corev1.FrameKind_FRAME_KIND_PONG:
			err = x.controlUp(websocket.PongMessage, f.GetData())
		case corev1.FrameKind_FRAME_KIND_CLOSE:
			_ = x.controlUp(websocket.CloseMessage, closePayload(int(f.GetCloseCode()), f.GetCloseReason()))
			// The upstream answers the handshake and the other loop relays its close; if it
			// does not, the connection goes anyway.
			time.AfterFunc(closeGrace, func() { x.up.Close() })
			return
		}
		if err != nil {
			x.up.Close()
			return
		}
	}
}

// fromUpstream relays the upstream's frames to the client, charging each response.done, until
// the upstream side ends; its close code and reason reach the client unchanged.
func (x *session) fromUpstream() {
	x.up.SetReadLimit(realtimeMaxUpstreamMessage)
	x.up.SetPingHandler(func(d string) error {
		return x.frameToClient(&corev1.Frame{Kind: corev1.FrameKind_FRAME_KIND_PING, Data: []byte(d)})
	})
	x.up.SetPongHandler(func(d string) error {
		return x.frameToClient(&corev1.Frame{Kind: corev1.FrameKind_FRAME_KIND_PONG, Data: []byte(d)})
	})
	for {
		kind, data, err := x.up.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			switch {
			case errors.As(err, &ce) && ce.Code != websocket.CloseAbnormalClosure:
				x.closeClient(ce.Code, ce.Text)
			case x.b.ctx.Err() == nil:
				x.closeClient(closeUpstreamLost, "the upstream connection was lost")
			}
			return
		}
		exhausted := false
		if kind == websocket.TextMessage {
			var err error
			if data, exhausted, err = x.upstreamEvent(data); errors.Is(err, billing.ErrInsufficient) {
				x.closeClient(closeBalance, "insufficient_balance: the balance cannot pay for this response")
				_ = x.controlUp(websocket.CloseMessage, closePayload(websocket.CloseNormalClosure, ""))
				return
			} else if errors.Is(err, billing.ErrBudgetExceeded) {
				x.closeClient(closeBalance, "budget_exceeded: the key's budget cannot pay for this response")
				_ = x.controlUp(websocket.CloseMessage, closePayload(websocket.CloseNormalClosure, ""))
				return
			} else if err != nil {
				x.closeClient(closeUpstreamLost, "unavailable: the gateway cannot record charges now")
				_ = x.controlUp(websocket.CloseMessage, closePayload(websocket.CloseNormalClosure, ""))
				return
			}
		}
		f := &corev1.Frame{Kind: corev1.FrameKind_FRAME_KIND_TEXT, Data: data}
		if kind == websocket.BinaryMessage {
			f.Kind = corev1.FrameKind_FRAME_KIND_BINARY
		}
		if err := x.frameToClient(f); err != nil {
			return
		}
		if exhausted {
			reason := "insufficient_balance: the balance cannot pay for another response"
			if x.ended != "" {
				reason = x.ended
			}
			x.closeClient(closeBalance, reason)
			_ = x.controlUp(websocket.CloseMessage, closePayload(websocket.CloseNormalClosure, ""))
			return
		}
	}
}

// upstreamEvent meters response.done and shows the public model in session events. It
// reports whether the balance can no longer pay for another response.
func (x *session) upstreamEvent(data []byte) ([]byte, bool, error) {
	switch typ := gjson.GetBytes(data, "type").String(); typ {
	case "response.done":
		exhausted, err := x.charge(data)
		return data, exhausted, err
	case "session.created", "session.updated":
		if gjson.GetBytes(data, "session.model").String() == x.upstreamModel && x.upstreamModel != x.b.m.ID {
			if out, err := sjson.SetBytes(data, "session.model", x.b.m.ID); err == nil {
				return out, false, nil
			}
		}
	default:
		if err := x.run.add(realtimeOutputBound(typ, data)); err != nil {
			if err.Code == apierror.InsufficientBalance {
				return nil, false, billing.ErrInsufficient
			}
			if err.Code == apierror.BudgetExceeded {
				return nil, false, billing.ErrBudgetExceeded
			}
			return nil, false, err
		}
	}
	return data, false, nil
}

// charge settles one response before its response.done reaches the client: its own request
// record, named by the session id, the gateway's count of responses and the upstream's
// response id (spaces between, so no client can send that id as its own, and a repeated
// upstream id is a new record, charged again), priced from reliable usage and paid from the
// session's reserve. Then a new reserve is held, grown from the usage just reported: the next
// response reads the whole conversation so far. exhausted: the balance cannot pay for
// another response. An error: the charge could not be recorded, or (ErrInsufficient) the
// response's usage went beyond its reserve and what is free; the response must not be
// delivered.
func (x *session) charge(event []byte) (exhausted bool, err error) {
	b := x.b
	u := metering.FromRealtimeResponse(event)
	id := gjson.GetBytes(event, "response.id").String()
	if id == "" {
		id = "-"
	}
	x.responses++
	// The response's count against the key's token limit is corrected to its reported usage;
	// without one its worst case stays counted. Either way it is the response's alone now,
	// and finish must not give it back.
	if u.Reliable {
		b.tokens.settle(usedTokens(u))
	}
	b.tokens = nil
	o := b.out
	o.RequestID, o.Status, o.Usage, o.Cost = fmt.Sprintf("%s %d %s", b.out.RequestID, x.responses, id), store.StatusOK, u, decimal.NullDecimal{}
	o.StartTime, x.started = x.started, time.Now()
	o.Attempts = nil // the session's own outcome carries its upstream call
	o.Cost = b.money.Cost(u)
	if o.Cost.Valid {
		o.EndTime = time.Now()
		charged, err := b.money.SettlePart(b.ctx, b.record(&o))
		switch {
		case errors.Is(err, billing.ErrInsufficient), errors.Is(err, billing.ErrBudgetExceeded):
			// Beyond the reserve and what is free: the response is not delivered, nor
			// charged (the ledger gives back what a capped commit took).
			o.Status, o.Cost, o.Usage = apierror.InsufficientBalance, decimal.NullDecimal{}, metering.Unreliable("the balance cannot pay for the response's usage")
			if errors.Is(err, billing.ErrBudgetExceeded) {
				o.Status, o.Usage = apierror.BudgetExceeded, metering.Unreliable("the key's budget cannot pay for the response's usage")
			}
			b.finishWith(&o, true)
			x.run = nil
			return true, err
		case err != nil:
			// (billing.Request.SettlePart gave back a commit whose answer was lost.)
			o.Status, o.Cost, o.Usage = store.StatusUnavailable, decimal.NullDecimal{}, metering.Unreliable("the charge could not be recorded")
			b.finishWith(&o, false)
			return false, err
		}
		o.Cost.Decimal = charged
		b.observe(&o)
	} else {
		b.finishWith(&o, true)
	}
	x.run = nil
	input := int64(realtimeReserveInput)
	if u.Reliable {
		input += u.Input + u.Output
		x.reserve = b.money.Price().WorstCase(input, realtimeReserveOutput)
	}
	b.money.StartAt(x.started) // the next response's charge counts in the window it starts in
	if err := b.money.Hold(b.ctx, b.money.Price(), x.reserve); err != nil {
		if errors.Is(err, billing.ErrBudgetExceeded) {
			x.ended = "budget_exceeded: the key's budget cannot pay for another response"
		}
		return true, nil
	}
	// As a new request would be: the next response's worst case must fit the key's tokens
	// of the minute, or the session ends here (finish gives back the hold), as it does when
	// the balance cannot pay for it.
	c, _, limitErr := b.s.Deps.Limiter.countTokens(b.k, input+realtimeReserveOutput)
	if limitErr != nil {
		x.ended = "rate_limited: the key's max_tokens_per_minute cannot admit another response"
		return true, nil
	}
	b.tokens = c
	x.run = b.newRunning(input, realtimeReserveOutput)
	return false, nil
}

func closePayload(code int, reason string) []byte {
	if code == 0 || code == websocket.CloseNoStatusReceived {
		return []byte{}
	}
	return websocket.FormatCloseMessage(code, reason)
}

// sessionCount counts open realtime sessions per key on this replica.
type sessionCount struct {
	mu sync.Mutex
	n  map[uuid.UUID]int
}

func (c *sessionCount) acquire(key uuid.UUID, limit int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[uuid.UUID]int{}
	}
	if c.n[key] >= limit {
		return false
	}
	c.n[key]++
	return true
}

// total is the number of sessions open on this replica.
func (c *sessionCount) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, k := range c.n {
		n += k
	}
	return n
}

// RealtimeSessions is the number of realtime sessions open on this replica (metrics).
func (s *CoreServer) RealtimeSessions() int { return s.sessions.total() }

func (c *sessionCount) release(key uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[key]--; c.n[key] <= 0 {
		delete(c.n, key)
	}
}
