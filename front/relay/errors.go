package relay

// The one place where the front's errors become the spec's envelope.

import (
	"errors"
	"net/http"
	"strings"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
)

// WriteError renders the spec envelope with the request's id; on the messages routes it
// carries the top-level "type":"error" that protocol's clients look for.
func WriteError(w http.ResponseWriter, r *http.Request, err *apierror.Error) {
	if p := r.URL.Path; p == "/v1/messages" || strings.HasPrefix(p, "/v1/messages/") {
		apierror.WriteTyped(w, r.Header.Get("X-Request-Id"), err)
		return
	}
	apierror.Write(w, r.Header.Get("X-Request-Id"), err)
}

// ErrorOf turns what core returned into the spec error to render.
func ErrorOf(err error) *apierror.Error {
	var ae *apierror.Error
	if errors.As(err, &ae) {
		return ae
	}
	return apistatus.FromError(err)
}
