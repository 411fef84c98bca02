// Package messages is the client side of the messages protocol: POST /v1/messages and
// POST /v1/messages/count_tokens. Decode turns the native body into the canonical request;
// the encoders render canonical events as the protocol's named-event stream or message
// object, or copy the upstream's own chunks when the upstream speaks messages too.
package messages

import (
	"net/http"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/messageswire"
	"modelgateway/front/relay"
)

// Endpoint families of contract.md.
const (
	Family      = "messages"
	CountFamily = "messages.count_tokens"
)

// Protocol serves POST /v1/messages.
type Protocol struct{}

var _ relay.Protocol = Protocol{}

// Decode implements relay.Protocol.
func (Protocol) Decode(r *http.Request, body []byte) (*corev1.GenerateRequest, *apierror.Error) {
	if err := checkVersion(r); err != nil {
		return nil, err
	}
	req, err := decode(body, true)
	if err != nil {
		return nil, err
	}
	req.EndpointFamily = Family
	forwardHeaders(r, req)
	return req, nil
}

// Encoder implements relay.Protocol.
func (Protocol) Encoder(w http.ResponseWriter, r *http.Request, req *corev1.GenerateRequest) relay.Encoder {
	return newEncoder(w, req)
}

// CountProtocol serves POST /v1/messages/count_tokens.
type CountProtocol struct{}

var _ relay.CountProtocol = CountProtocol{}

// Decode implements relay.CountProtocol: the same body as /v1/messages without the
// generation controls; max_tokens is not required.
func (CountProtocol) Decode(r *http.Request, body []byte) (*corev1.GenerateRequest, *apierror.Error) {
	if err := checkVersion(r); err != nil {
		return nil, err
	}
	req, err := decode(body, false)
	if err != nil {
		return nil, err
	}
	req.EndpointFamily = CountFamily
	req.Stream = false
	forwardHeaders(r, req)
	return req, nil
}

// Render implements relay.CountProtocol.
func (CountProtocol) Render(w http.ResponseWriter, r *http.Request, inputTokens int64) {
	writeJSON(w, http.StatusOK, messageswire.CountTokensResponse{InputTokens: inputTokens})
}

// Version header names: the spec's neutral name, and the one the official SDKs send.
const (
	headerVersion       = "messages-version"
	headerVendorVersion = "anthropic-version"
	headerBeta          = "anthropic-beta"
)

// checkVersion requires a version header. The SDKs cannot rename it, so the vendor spelling
// is accepted too, and every date-shaped value: each SDK release may send a newer API date
// (@anthropic-ai/sdk 1.x sends 2026-10-21), while the gateway speaks to an anthropic upstream
// in the version its adapter implements. An error names the header the client sent.
func checkVersion(r *http.Request) *apierror.Error {
	a, b := r.Header.Values(headerVersion), r.Header.Values(headerVendorVersion)
	if len(a) == 0 && len(b) == 0 {
		return apierror.New(apierror.InvalidRequest, "the %s (or %s) header is required, e.g. %s", headerVersion, headerVendorVersion, messageswire.Version)
	}
	for _, h := range []struct {
		name   string
		values []string
	}{{headerVersion, a}, {headerVendorVersion, b}} {
		for _, v := range h.values {
			if !dateShaped(v) {
				return apierror.New(apierror.InvalidRequest, "unsupported %s %q: a version is a date, e.g. %s", h.name, v, messageswire.Version)
			}
		}
	}
	return nil
}

// dateShaped reports whether v is YYYY-MM-DD with a plausible month and day.
func dateShaped(v string) bool {
	if len(v) != 10 || v[4] != '-' || v[7] != '-' {
		return false
	}
	for i, c := range []byte(v) {
		if i != 4 && i != 7 && (c < '0' || c > '9') {
			return false
		}
	}
	month := int(v[5]-'0')*10 + int(v[6]-'0')
	day := int(v[8]-'0')*10 + int(v[9]-'0')
	return month >= 1 && month <= 12 && day >= 1 && day <= 31
}

// forwardHeaders keeps the beta flags for an upstream of the same protocol; the adapter sends
// them only in passthrough, where the body's beta fields are still there.
func forwardHeaders(r *http.Request, req *corev1.GenerateRequest) {
	if v := r.Header.Values(headerBeta); len(v) > 0 {
		req.ForwardHeaders = map[string]string{headerBeta: joinComma(v)}
	}
}

func joinComma(v []string) string {
	if len(v) == 1 {
		return v[0]
	}
	out := v[0]
	for _, s := range v[1:] {
		out += "," + s
	}
	return out
}
