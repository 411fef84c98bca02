package admin

import (
	"testing"

	"modelgateway/core/store/storetest"
)

// TestMain gives the package's tests a throwaway PostgreSQL and stops it afterwards.
func TestMain(m *testing.M) { storetest.Main(m) }
