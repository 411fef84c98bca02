package realtime

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: a reader still reading a
// client, a SessionFunc never told that its client has gone, a timer's close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
