package front

import (
	"net/http"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
)

// writeError renders the spec envelope with the request's id.
func writeError(w http.ResponseWriter, r *http.Request, err *apierror.Error) {
	apierror.Write(w, r.Header.Get("X-Request-Id"), err)
}

func fromGRPC(err error) *apierror.Error { return apistatus.FromError(err) }
