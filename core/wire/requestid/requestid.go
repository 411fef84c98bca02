// Package requestid is the form of request ids: the ones the gateway makes, and the ones a
// client may send (contract: "Where spec.md leaves a choice").
//
// A gateway-made id is "gw-" and 32 lowercase hex digits of a uuid v7 (sortable by time as
// text). A client may not send an id of that prefix in any letter case, so an id the gateway
// made - shown in an answer's headers while the answer still runs - can never be reused by a
// client to meet (and settle before) the request that owns it.
package requestid

import (
	"encoding/hex"
	"strings"

	"github.com/google/uuid"

	"modelgateway/core/wire/apierror"
)

// Prefix starts every id the gateway makes.
const Prefix = "gw-"

// New makes a fresh gateway id: Prefix and the 32 hex digits of a uuid v7.
func New() string {
	u := uuid.Must(uuid.NewV7())
	var b [len(Prefix) + 32]byte
	copy(b[:], Prefix)
	hex.Encode(b[len(Prefix):], u[:])
	return string(b[:])
}

// Gateway reports whether id has the gateway's prefix, in any letter case: such an id is
// the gateway's alone.
func Gateway(id string) bool {
	return len(id) >= len(Prefix) && strings.EqualFold(id[:len(Prefix)], Prefix)
}

// CheckClient refuses a client-sent id outside what a client may send: 1 to 200 visible
// ASCII characters, not of the gateway's form.
func CheckClient(id string) *apierror.Error {
	if !apierror.ValidRequestID(id) {
		return apierror.New(apierror.InvalidRequest, "x-request-id must be 1 to 200 visible ASCII characters")
	}
	if Gateway(id) {
		return apierror.New(apierror.InvalidRequest, "x-request-id may not start with %q: such ids are the gateway's own", Prefix)
	}
	return nil
}
