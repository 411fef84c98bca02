package responses_test

import (
	"testing"

	"modelgateway/core/gatewaytest"
)

// TestMain: the stored responses' end-to-end tests run the gateway binary on a throwaway
// PostgreSQL (gatewaytest); the package's own tests need neither.
func TestMain(m *testing.M) { gatewaytest.Main(m) }
