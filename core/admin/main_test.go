package admin

import (
	"testing"

	"modelgateway/core/gatewaytest"
)

// TestMain gives the package's tests a throwaway PostgreSQL (and, for those that run the
// whole gateway, its binary) and cleans up afterwards.
func TestMain(m *testing.M) { gatewaytest.Main(m) }
