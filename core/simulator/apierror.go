package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// protocol names an error convention.
type protocol int

const (
	protoOpenAI protocol = iota
	protoAnthropic
	protoGemini
)

// openAIError is OpenAI's error object; all four keys are always present.
type openAIError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

type anthropicError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

type geminiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

// newOpenAIError picks type and code the way the real API labels each status.
func newOpenAIError(status int, msg string) openAIError {
	e := openAIError{Message: msg, Type: "invalid_request_error"}
	code := func(c string) { e.Code = &c }
	switch {
	case status == http.StatusUnauthorized:
		code("invalid_api_key")
	case status == http.StatusForbidden:
		e.Type = "permission_error"
	case status == http.StatusNotFound:
		code("model_not_found")
	case status == http.StatusTooManyRequests:
		e.Type = "requests"
		code("rate_limit_exceeded")
	case status >= 500:
		e.Type = "server_error"
	}
	return e
}

// anthropicErrorType is the documented error.type of each status.
func anthropicErrorType(status int) string {
	switch status {
	case 401:
		return "authentication_error"
	case 402:
		return "billing_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 504:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// geminiStatus is the google.rpc code name Google pairs with each HTTP status.
func geminiStatus(status int) string {
	switch status {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ABORTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 501:
		return "UNIMPLEMENTED"
	case 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

// errorBody is the protocol's error document for an HTTP status.
func errorBody(p protocol, status int, msg string) []byte {
	var v any
	switch p {
	case protoAnthropic:
		v = struct {
			Type      string         `json:"type"`
			Error     anthropicError `json:"error"`
			RequestID string         `json:"request_id"`
		}{"error", anthropicError{anthropicErrorType(status), msg}, "req_sim" + strconv.Itoa(status)}
	case protoGemini:
		v = struct {
			Error geminiError `json:"error"`
		}{geminiError{status, msg, geminiStatus(status)}}
	default:
		v = struct {
			Error openAIError `json:"error"`
		}{newOpenAIError(status, msg)}
	}
	return mustJSON(v)
}

// writeError answers with status and the protocol's error body.
func writeError(w http.ResponseWriter, p protocol, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(errorBody(p, status, msg))
}

// failMessage is the message of a #sim:fail answer; it names the directive so a test failure
// shows where the error came from.
func failMessage(status int) string {
	return fmt.Sprintf("simulated failure (#sim:fail=%d): %s", status, http.StatusText(status))
}

// mustJSON marshals wire structs built here; they cannot fail to encode.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("simulator: encoding %T: %v", v, err))
	}
	return b
}

// writeParamError answers 400 with an OpenAI error that names the offending parameter, as the
// real API does for a missing or invalid field.
func writeParamError(w http.ResponseWriter, param, code, msg string) {
	e := newOpenAIError(http.StatusBadRequest, msg)
	e.Param, e.Code = &param, &code
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(mustJSON(struct {
		Error openAIError `json:"error"`
	}{e}))
}

// missingParam answers the real API's error for a required field that is absent.
func missingParam(w http.ResponseWriter, param string) {
	writeParamError(w, param, "missing_required_parameter", fmt.Sprintf("Missing required parameter: '%s'.", param))
}

// invalidParam answers the real API's error for a field whose value is not accepted.
func invalidParam(w http.ResponseWriter, param, msg string) {
	writeParamError(w, param, "invalid_value", msg)
}
