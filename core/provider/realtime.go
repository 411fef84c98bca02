package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	corev1 "modelgateway/gen/gateway/core/v1"
)

// RealtimeDialer is an adapter that can open a realtime WebSocket session upstream.
type RealtimeDialer interface {
	DialRealtime(ctx context.Context, up Upstream, open *corev1.RealtimeOpen) (*websocket.Conn, error)
}

// realtimeQuery are the query parameters of the upstream's realtime endpoint a client may
// set: anything else (an api-version, a key, a debugging switch of some deployment) is the
// gateway's business, not the client's.
var realtimeQuery = map[string]bool{"intent": true}

// realtimeDialer dials with the first-byte timeout bounding the handshake.
var realtimeDialer = &websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: DefaultFirstByteTimeout,
	ReadBufferSize: 32 << 10, WriteBufferSize: 32 << 10}

// DialOpenAIRealtime opens {base}/realtime?model=<upstream model> (base as the OpenAI SDK
// takes it, http(s) turned into ws(s)) with the provider's credential and the client's beta
// choice; of the client's other query parameters only those of realtimeQuery go along.
func DialOpenAIRealtime(ctx context.Context, base string, up Upstream, open *corev1.RealtimeOpen) (*websocket.Conn, error) {
	u, err := url.Parse(strings.TrimRight(base, "/") + "/realtime")
	if err != nil {
		return nil, &Error{Message: "bad upstream address", Err: err}
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	}
	q := url.Values{}
	for k, v := range open.GetQuery() {
		if realtimeQuery[k] {
			q.Set(k, v)
		}
	}
	q.Set("model", up.UpstreamModel)
	u.RawQuery = q.Encode()
	h := http.Header{}
	h.Set(HeaderUserAgent, UserAgent)
	if up.APIKey != "" {
		h.Set("Authorization", "Bearer "+up.APIKey)
	}
	if open.GetBeta() {
		h.Set("OpenAI-Beta", "realtime=v1")
	}
	timeout := up.Timeouts.FirstByte
	if timeout <= 0 {
		timeout = DefaultFirstByteTimeout
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, resp, err := realtimeDialer.DialContext(dctx, u.String(), h)
	if err == nil {
		return conn, nil
	}
	if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
		var raw []byte
		if resp.Body != nil { // (the dialer keeps the start of the refusal's body; no Close needed)
			raw, _ = io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		}
		e := StatusError(resp.StatusCode, raw)
		// A rate-limited handshake says when to come back, as an HTTP answer does: the
		// credential is set aside that long and a retry waits for it (core/rpc firstAnswer).
		e.RetryAfter = RetryAfter(resp.Header, time.Now())
		return nil, e
	}
	if errors.Is(dctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		return nil, &Error{Message: "the upstream did not answer in time", Timeout: true, Retryable: true, Err: err}
	}
	return nil, &Error{Message: "the upstream could not be reached", Retryable: true, Err: err}
}

// DialRealtime implements RealtimeDialer for the simulator.
func (n ByClientProtocol) DialRealtime(ctx context.Context, up Upstream, open *corev1.RealtimeOpen) (*websocket.Conn, error) {
	root := strings.TrimSuffix(strings.TrimRight(up.BaseURL, "/"), "/v1")
	if root == "" {
		root = n.DefaultBase
	}
	return DialOpenAIRealtime(ctx, root+"/v1", up, open)
}

// RealtimeWriteTimeout bounds one frame written to an upstream session.
const RealtimeWriteTimeout = 10 * time.Second
