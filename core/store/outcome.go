package store

import "modelgateway/core/wire/apierror"

// Request outcomes: how a request ended, as RequestRecord.Status (the requests table's status
// column), rpc.Outcome.Status and the telemetry and status site that read them. A request
// refused before it went upstream has the spec error code it was refused with instead;
// StatusUpstreamError and StatusUnavailable are such codes, used also for requests that
// failed after they were admitted.
const (
	StatusOK            = "ok"
	StatusCancelled     = "cancelled"            // the client went away before the answer was complete
	StatusUpstreamError = apierror.UpstreamError // the provider failed
	StatusUnavailable   = apierror.Unavailable   // withheld: the charge could not be recorded, so the answer was not delivered
	StatusInProgress    = "in_progress"          // reserved before going upstream, not settled yet
	StatusAbandoned     = "abandoned"            // reserved by a replica that died before settling it
)
