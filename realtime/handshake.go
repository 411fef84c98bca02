package realtime

import (
	"net/http"
	"strings"

	"github.com/gorilla/websocket"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/front/relay"
)

// Subprotocols of the OpenAI realtime handshake. Browsers cannot set headers on a WebSocket,
// so they send the key and the beta flag as subprotocols, and abort unless the server answers
// "realtime".
const (
	protocolRealtime = "realtime"
	protocolKey      = "openai-insecure-api-key."
	protocolBeta     = "openai-beta.realtime-v1"
)

// handshake checks the request in the order a client should learn of its problems (the key
// first), normalises the key into Authorization: Bearer, and builds the open message.
func handshake(r *http.Request) (*corev1.RealtimeOpen, *apierror.Error) {
	protocols := websocket.Subprotocols(r)
	key := clientKey(r, protocols)
	if key == "" {
		return nil, apierror.New(apierror.InvalidKey, "no API key was provided")
	}
	for _, h := range []string{"X-Api-Key", "Api-Key"} {
		r.Header.Del(h)
	}
	r.Header.Set("Authorization", "Bearer "+key)
	if msg := notUpgrade(r); msg != "" {
		return nil, apierror.New(apierror.InvalidRequest, "%s", msg)
	}
	q := r.URL.Query()
	model := strings.TrimSpace(q.Get("model"))
	if model == "" {
		return nil, apierror.New(apierror.InvalidRequest, "the model query parameter is required, as in /v1/realtime?model=gpt-realtime")
	}
	open := &corev1.RealtimeOpen{Model: model, Beta: isBeta(r, protocols)}
	for name, v := range q {
		if name == "model" || name == "key" || len(v) == 0 {
			continue
		}
		if open.Query == nil {
			open.Query = map[string]string{}
		}
		open.Query[name] = v[0]
	}
	return open, nil
}

// clientKey reads the key by the mechanisms of spec 5, else from the browser's subprotocol.
func clientKey(r *http.Request, protocols []string) string {
	if k := relay.ExtractKey(r); k != "" {
		return k
	}
	for _, p := range protocols {
		if k, ok := strings.CutPrefix(p, protocolKey); ok && k != "" {
			return k
		}
	}
	return ""
}

// isBeta reports whether the client asked for the beta interface, by header (server-side
// SDKs) or subprotocol (browsers).
func isBeta(r *http.Request, protocols []string) bool {
	for _, v := range r.Header.Values("OpenAI-Beta") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "realtime=v1") {
				return true
			}
		}
	}
	for _, p := range protocols {
		if p == protocolBeta {
			return true
		}
	}
	return false
}

// notUpgrade checks what the upgrade itself will check, so that a request that cannot be
// upgraded is refused before core dials an upstream for it.
func notUpgrade(r *http.Request) string {
	switch {
	case r.Method != http.MethodGet:
		return r.Method + " is not a WebSocket handshake: /v1/realtime takes GET with Upgrade: websocket"
	case !websocket.IsWebSocketUpgrade(r):
		return "/v1/realtime is a WebSocket endpoint: the request must carry Connection: Upgrade and Upgrade: websocket"
	case !headerHasToken(r.Header, "Sec-Websocket-Version", "13"):
		return "unsupported WebSocket version: Sec-WebSocket-Version must be 13"
	case r.Header.Get("Sec-Websocket-Key") == "":
		return "the WebSocket handshake lacks Sec-WebSocket-Key"
	}
	return ""
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
