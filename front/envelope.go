package front

import (
	"net/http"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
	"modelgateway/front/relay"
)

// writeError renders the spec envelope with the request's id (relay.WriteError: the messages
// routes add their protocol's top-level type).
func writeError(w http.ResponseWriter, r *http.Request, err *apierror.Error) {
	relay.WriteError(w, r, err)
}

func fromGRPC(err error) *apierror.Error { return apistatus.FromError(err) }
