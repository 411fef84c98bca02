// Package apierror holds the spec's error codes (spec 7), the HTTP status each one answers
// with, and the error envelope of spec 2.4. It is a leaf: core produces these errors, the
// front renders them, and both import only this.
package apierror

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Spec error codes (spec 7) and the few operator-surface codes the spec leaves to us.
const (
	InvalidKey             = "invalid_key"
	ModelNotFound          = "model_not_found"
	ModelNotAllowed        = "model_not_allowed"
	EndpointNotAllowed     = "endpoint_not_allowed"
	InvalidRequest         = "invalid_request_error"
	InsufficientBalance    = "insufficient_balance"
	StreamingNotSupported  = "streaming_not_supported"
	UnsupportedContentType = "unsupported_content_type"
	PayloadTooLarge        = "payload_too_large"
	UnsupportedPromptShape = "unsupported_prompt_shape"
	InvalidCatalogCurrency = "invalid_catalog_currency"
	UpstreamError          = "upstream_error"
	UpstreamTimeout        = "upstream_timeout"
	PricingUnavailable     = "pricing_unavailable"
	DuplicateRequestID     = "duplicate_request_id"
	// RateLimited: a per-key limit (concurrent requests, requests per second, realtime
	// sessions, bytes of bodies in flight) or the replica's body budget is exhausted; HTTP 429
	// with Retry-After.
	RateLimited = "rate_limited"
	// BudgetExceeded: what is left of the key's budget in the current window cannot cover the
	// request's hold (contract: "Keys: limits, budgets, expiry"); HTTP 402 like
	// insufficient_balance, which the official SDKs do not retry.
	BudgetExceeded = "budget_exceeded"

	// Operator surface and routing; not in the spec's table.
	NotFound           = "not_found"
	MethodNotAllowed   = "method_not_allowed"
	AlreadyExists      = "already_exists"
	FailedPrecondition = "failed_precondition"
	InvalidAdminToken  = "invalid_admin_token"
	Unavailable        = "unavailable"
	Internal           = "internal_error"
)

// Type is error.type for every locally produced failure.
const Type = "service_error"

// statuses follows what the corresponding upstream APIs answer, so SDK error classes and retry
// rules behave as they would against the provider: 402 and 403 are not retried by the
// official SDKs, 409 is retried once with the same request id and fails again, which is right.
var statuses = map[string]int{
	InvalidKey:             http.StatusUnauthorized,
	ModelNotFound:          http.StatusNotFound,
	ModelNotAllowed:        http.StatusForbidden,
	EndpointNotAllowed:     http.StatusForbidden,
	InvalidRequest:         http.StatusBadRequest,
	InsufficientBalance:    http.StatusPaymentRequired,
	StreamingNotSupported:  http.StatusBadRequest,
	UnsupportedContentType: http.StatusUnsupportedMediaType,
	PayloadTooLarge:        http.StatusRequestEntityTooLarge,
	UnsupportedPromptShape: http.StatusBadRequest,
	InvalidCatalogCurrency: http.StatusBadRequest,
	UpstreamError:          http.StatusBadGateway,
	UpstreamTimeout:        http.StatusGatewayTimeout,
	PricingUnavailable:     http.StatusForbidden,
	DuplicateRequestID:     http.StatusConflict,
	RateLimited:            http.StatusTooManyRequests,
	BudgetExceeded:         http.StatusPaymentRequired,
	NotFound:               http.StatusNotFound,
	MethodNotAllowed:       http.StatusMethodNotAllowed,
	AlreadyExists:          http.StatusConflict,
	FailedPrecondition:     http.StatusConflict,
	InvalidAdminToken:      http.StatusUnauthorized,
	Unavailable:            http.StatusServiceUnavailable,
	Internal:               http.StatusInternalServerError,
}

// Codes lists every code in the order of the README's table.
var Codes = []string{
	InvalidKey, ModelNotFound, ModelNotAllowed, EndpointNotAllowed, InvalidRequest,
	InsufficientBalance, StreamingNotSupported, UnsupportedContentType, PayloadTooLarge,
	UnsupportedPromptShape, InvalidCatalogCurrency, UpstreamError, UpstreamTimeout,
	PricingUnavailable, DuplicateRequestID, RateLimited, BudgetExceeded, NotFound, MethodNotAllowed, AlreadyExists,
	FailedPrecondition, InvalidAdminToken, Unavailable, Internal,
}

// HTTPStatus is the status a code answers with; unknown codes are internal errors.
func HTTPStatus(code string) int {
	if s, ok := statuses[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Error is a failure with a spec code. Upstream errors may carry the upstream's own status
// (429, 400) where it is meaningful to the client.
type Error struct {
	Code    string
	Message string
	Status  int // 0 = HTTPStatus(Code)
	// RetryAfter is the Retry-After of a rate_limited answer in seconds; 0 means 1.
	RetryAfter int
	// Param names the request parameter at fault, where one is (OpenAI's error.param).
	Param string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// HTTPStatus is the status this error answers with.
func (e *Error) HTTPStatus() int {
	if e.Status != 0 {
		return e.Status
	}
	return HTTPStatus(e.Code)
}

// New makes an Error with a formatted message.
func New(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Envelope is the spec 2.4 body. Type is set only on the messages routes: the clients of that
// protocol (the AI SDK's anthropic provider, the official SDKs' error classes) recognise an
// error body by its top-level "type":"error"; the spec's fields inside are unchanged.
type Envelope struct {
	Type  string `json:"type,omitempty"`
	Error Body   `json:"error"`
}

// EnvelopeType is Envelope.Type on the messages routes.
const EnvelopeType = "error"

// Body is the inside of the envelope.
type Body struct {
	Message   string `json:"message"`
	Type      string `json:"type"`
	Code      string `json:"code"`
	RequestID string `json:"request_id"`
	Param     string `json:"param,omitempty"`
}

// CodeRecorder is implemented by a response writer that observes the spec code of error
// answers (the access log and the request counter). Write finds it through Unwrap.
type CodeRecorder interface{ RecordErrorCode(code string) }

func recordCode(w http.ResponseWriter, code string) {
	for {
		if r, ok := w.(CodeRecorder); ok {
			r.RecordErrorCode(code)
			return
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return
		}
		w = u.Unwrap()
	}
}

// Write renders err as the envelope, with x-request-id echoed in the header too.
func Write(w http.ResponseWriter, requestID string, err *Error) {
	write(w, Envelope{Error: Body{Message: err.Message, Type: Type, Code: err.Code, RequestID: requestID, Param: err.Param}}, requestID, err)
}

// WriteTyped is Write with the envelope's top-level "type":"error", for the messages routes.
func WriteTyped(w http.ResponseWriter, requestID string, err *Error) {
	write(w, Envelope{Type: EnvelopeType, Error: Body{Message: err.Message, Type: Type, Code: err.Code, RequestID: requestID, Param: err.Param}}, requestID, err)
}

func write(w http.ResponseWriter, env Envelope, requestID string, err *Error) {
	recordCode(w, err.Code)
	body, _ := json.Marshal(env)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Request-Id", requestID)
	h.Del("Content-Length")
	if err.Code == RateLimited {
		h.Set("Retry-After", strconv.Itoa(max(1, err.RetryAfter)))
	}
	w.WriteHeader(err.HTTPStatus())
	_, _ = w.Write(append(body, '\n'))
}

// ValidRequestID is the form of a client-chosen request id: 1 to 200 visible ASCII characters.
// The gateway's own derived ids contain spaces, so a client can never send one.
func ValidRequestID(id string) bool {
	if id == "" || len(id) > 200 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}
