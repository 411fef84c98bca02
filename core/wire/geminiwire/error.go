package geminiwire

import (
	"encoding/json"
	"net/http"
)

// ErrorResponse is the error body: {"error":{"code","message","status"}}. It is also what a
// stream chunk looks like when the stream fails midway.
type ErrorResponse struct {
	Error *Status `json:"error"`
}

// Status is a google.rpc.Status as the REST API renders it: Code is the HTTP status, Status
// the canonical code name.
type Status struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Status  string          `json:"status,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
}

// NewStatus is the status for an HTTP status code and message.
func NewStatus(httpStatus int, message string) *Status {
	return &Status{Code: httpStatus, Message: message, Status: StatusName(httpStatus)}
}

// StatusName is the google.rpc code name Google pairs with an HTTP status.
func StatusName(httpStatus int) string {
	switch httpStatus {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusPaymentRequired:
		return "FAILED_PRECONDITION"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case http.StatusNotImplemented, http.StatusMethodNotAllowed:
		return "UNIMPLEMENTED"
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if httpStatus >= 500 {
		return "INTERNAL"
	}
	if httpStatus >= 400 {
		return "FAILED_PRECONDITION"
	}
	return "UNKNOWN"
}
