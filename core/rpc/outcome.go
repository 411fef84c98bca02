package rpc

import (
	"context"
	"time"

	"github.com/shopspring/decimal"

	"modelgateway/core/metering"
)

// Outcome is what one finished generation leaves behind: who asked, what for, the normalised
// usage and what it cost.
type Outcome struct {
	RequestID      string
	KeyID          string
	KeyPrefix      string // the key's display prefix, safe to log
	ProfileID      string
	Model          string
	EndpointFamily string
	Provider       string
	// Status is store.StatusOK, StatusUpstreamError, StatusCancelled, StatusUnavailable, or the
	// spec code that refused the request.
	Status    string
	Usage     metering.Usage
	Cost      decimal.NullDecimal
	Currency  string
	StartTime time.Time
	// FirstByteTime is when the first answer event went to the client (time to first token
	// for streams); zero when none did.
	FirstByteTime time.Time
	EndTime       time.Time
	// Attempts are the upstream calls in fallback order; the last one answered when Provider
	// is set.
	Attempts []Attempt
}

// Attempt is one upstream call of a request.
type Attempt struct {
	Provider, Kind string // the catalogue's provider id and its kind
	UpstreamModel  string
	// Status is the HTTP status the upstream answered; 0 when none came.
	Status     int
	Start, End time.Time
	// Error is empty on success, else a low-cardinality error type: AttemptTimeout, the
	// upstream's HTTP status, or AttemptFailed.
	Error string
}

// Attempt.Error types besides the upstream's HTTP status (metric labels: keep them few).
const (
	AttemptTimeout = "timeout"
	AttemptFailed  = "error"
)

// Observer sees every outcome once, after billing has queued it (the telemetry, the status
// site's counts). It is not core/metering, which measures usage. ctx is the request's and
// may be cancelled already (the client has gone): an observer reads its values (the access
// line, the trace) and never waits on it.
type Observer interface {
	Record(ctx context.Context, o Outcome)
}

// Observers shows every outcome to each of its observers in turn.
type Observers []Observer

// Record implements Observer.
func (ms Observers) Record(ctx context.Context, o Outcome) {
	for _, m := range ms {
		m.Record(ctx, o)
	}
}
