package media

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: a pump still reading the
// client's body, a stuck Forward, a test server's connection.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
