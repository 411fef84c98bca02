package messageswire

import "net/http"

// ErrorResponse is the protocol's error body, also the data of an `error` stream event.
type ErrorResponse struct {
	Type      string    `json:"type"` // "error"
	Error     ErrorBody `json:"error"`
	RequestID string    `json:"request_id,omitempty"`
}

// ErrorBody is the inside of an error.
type ErrorBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Error types, by the HTTP status the API answers them with.
const (
	ErrInvalidRequest = "invalid_request_error"
	ErrAuthentication = "authentication_error"
	ErrBilling        = "billing_error"
	ErrPermission     = "permission_error"
	ErrNotFound       = "not_found_error"
	ErrTooLarge       = "request_too_large"
	ErrRateLimit      = "rate_limit_error"
	ErrAPI            = "api_error"
	ErrTimeout        = "timeout_error"
	ErrOverloaded     = "overloaded_error"
)

// StatusOverloaded is the API's own status for overloaded_error.
const StatusOverloaded = 529

// ErrorStatus is the HTTP status that corresponds to an error type; used to classify an
// error that arrives inside a stream, where there is no status line.
func ErrorStatus(errType string) int {
	switch errType {
	case ErrInvalidRequest:
		return http.StatusBadRequest
	case ErrAuthentication:
		return http.StatusUnauthorized
	case ErrBilling:
		return http.StatusPaymentRequired
	case ErrPermission:
		return http.StatusForbidden
	case ErrNotFound:
		return http.StatusNotFound
	case ErrTooLarge:
		return http.StatusRequestEntityTooLarge
	case ErrRateLimit:
		return http.StatusTooManyRequests
	case ErrTimeout:
		return http.StatusGatewayTimeout
	case ErrOverloaded:
		return StatusOverloaded
	}
	return http.StatusInternalServerError
}
