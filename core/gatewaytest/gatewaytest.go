// Package gatewaytest runs the gateway the way an operator does, for the tests of the packages
// it is built from: the binary built once per test binary, `gateway serve` replicas as real
// processes on a throwaway PostgreSQL (core/store/storetest), and a recording upstream
// simulator (core/simulator) in the test process.
//
// The wiring lives in the root package, which no other package may import; a package's test
// that needs the whole gateway therefore talks to it over its sockets, as clients do. The root
// package's own tests (kill, drain, start-up, soak) use the same processes.
package gatewaytest

import (
	"os"
	"testing"

	"modelgateway/core/store/storetest"
)

// AdminToken is the admin bearer token of every replica Start runs.
const AdminToken = "test-admin-token"

// UpstreamKey is the provider credential every replica finds in UP_KEY (catalogues name it
// with "api_key_env": "UP_KEY"); the stub upstreams see it on each call.
const UpstreamKey = "upstream-secret-key"

// Main runs the package's tests, then removes the built binary and stops the throwaway
// PostgreSQL cluster.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main for a TestMain with checks of its own after the tests (a goroutine leak check):
// it runs the tests, cleans up, and returns the exit code.
func Run(m *testing.M) int {
	code := m.Run()
	removeBinary()
	storetest.Stop()
	return code
}
