package telemetry

import (
	"testing"

	"modelgateway/core/rpc"
)

// gateway_upstream_attempts_total's outcome label has the contract's four values: the
// upstream's status is not a label value of its own.
func TestAttemptOutcomeLabels(t *testing.T) {
	for errType, want := range map[string]string{
		"": "ok", "429": "rate_limited", rpc.AttemptTimeout: "timeout",
		"503": "error", "401": "error", rpc.AttemptFailed: "error",
	} {
		if got := AttemptOutcome(errType); got != want {
			t.Errorf("AttemptOutcome(%q) = %q, want %q", errType, got, want)
		}
	}
}
