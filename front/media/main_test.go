package media

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"modelgateway/core/gatewaytest"
)

// TestMain fails the package when a test leaves a goroutine behind: a pump still reading the
// client's body, a stuck Forward, a test server's connection.
// The end-to-end tests run the gateway binary (gatewaytest), whose goroutines are another
// process's; what the check sees here is the package's and the test clients'.
func TestMain(m *testing.M) {
	code := gatewaytest.Run(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: Errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
