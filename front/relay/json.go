package relay

import (
	"net/http"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/strictjson"
)

// ReadJSON reads a JSON body within the limit (ReadBody) and refuses, before any part of it
// is decoded, a body that two readers could read differently: a duplicate member name in any
// object, invalid UTF-8 or escapes, more than one value (core/wire/strictjson). What passes
// is read by the protocol's Decode with exact names, and is what goes upstream.
func ReadJSON(r *http.Request, limit int64) ([]byte, *apierror.Error) {
	body, apiErr := ReadBody(r, limit)
	if apiErr != nil {
		return nil, apiErr
	}
	if err := strictjson.Check(body); err != nil {
		return nil, apierror.New(apierror.InvalidRequest, "%v", err)
	}
	return body, nil
}
