package rpc

import (
	"context"
	"time"

	"github.com/gorilla/websocket"
)

// closePolicy is the close code of a session the gateway ends for its key or its length.
const closePolicy = websocket.ClosePolicyViolation // 1008

// watch ends the session when its key stops being good for it — revoked, expired, or its
// policy no longer allowing realtime or the model — on this replica's next snapshot, which every
// replica takes within a second of the change (the same bound as for HTTP requests); and,
// when Deps sets one, at the maximum session length. It returns when done closes.
func (x *session) watch(ctx context.Context, secret string, done <-chan struct{}) {
	var limit <-chan time.Time
	if d := x.b.s.Deps.RealtimeMaxSession; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		limit = t.C
	}
	holder := x.b.s.Snapshots
	for {
		changed := holder.Changed()
		snap := holder.Current()
		k, apiErr := snap.Authenticate(secret)
		if apiErr == nil {
			_, apiErr = snap.Authorize(k, "realtime", x.b.m.ID)
		}
		if apiErr != nil {
			x.end(closePolicy, apiErr.Code+": "+apiErr.Message)
			return
		}
		// An expiry comes with no snapshot change: the session ends at the key's expire_time
		// like at its revocation (the check above then fails).
		var expired <-chan time.Time
		var expiry *time.Timer
		if !k.ExpireTime.IsZero() {
			expiry = time.NewTimer(time.Until(k.ExpireTime))
			expired = expiry.C
		}
		stop := func() {
			if expiry != nil {
				expiry.Stop()
			}
		}
		select {
		case <-expired:
		case <-changed:
			stop()
		case <-limit:
			stop()
			x.end(closePolicy, "session_too_long: the session reached its maximum length")
			return
		case <-done:
			stop()
			return
		case <-ctx.Done():
			stop()
			return
		}
	}
}

// end closes the session from the gateway's side: the client gets the close frame with the
// code and reason, the upstream a normal close, and both loops then end.
func (x *session) end(code int, reason string) {
	if len(reason) > 120 { // a close frame's reason is at most 123 bytes
		reason = reason[:120]
	}
	x.closeClient(code, reason)
	_ = x.controlUp(websocket.CloseMessage, closePayload(websocket.CloseNormalClosure, ""))
	time.AfterFunc(closeGrace, func() { x.up.Close() })
}
