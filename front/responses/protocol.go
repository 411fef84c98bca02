// Package responses is the responses protocol's generation routes, POST /v1/responses and
// POST /v1/responses/compact: it decodes the client's body into the canonical request and
// renders canonical events as a Response object or its event stream. When the upstream speaks
// responses too, the upstream's own events are written through unchanged (passthrough).
package responses

import (
	"net/http"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/front/relay"
)

// Protocol is one of the two routes; Compact selects /v1/responses/compact.
type Protocol struct {
	Compact bool
	// Core keeps and reads stored responses (stored.go); nil: nothing is stored and a
	// previous_response_id is decoded as sent, as in tests of the protocol alone.
	Core corev1.CoreServiceClient
}

var _ relay.Protocol = Protocol{}

// Endpoint families of the two routes (contract.md).
const (
	Family        = "responses"
	CompactFamily = "responses.compact"
)

// Family is the endpoint family of the route (contract.md).
func (p Protocol) Family() string {
	if p.Compact {
		return CompactFamily
	}
	return Family
}

func (p Protocol) protocol() corev1.Protocol {
	if p.Compact {
		return corev1.Protocol_PROTOCOL_RESPONSES_COMPACT
	}
	return corev1.Protocol_PROTOCOL_RESPONSES
}

// Encoder implements relay.Protocol.
func (p Protocol) Encoder(w http.ResponseWriter, r *http.Request, req *corev1.GenerateRequest) relay.Encoder {
	e := newEncoder(w, r, req, p.Compact)
	e.core, e.store = p.Core, p.storing(req)
	return e
}
