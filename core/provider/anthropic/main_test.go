package anthropic

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"modelgateway/core/provider"
)

// TestMain checks that no stream leaves a goroutine behind: a body not closed keeps the
// connection's read loop alive. Idle pooled connections are closed first; they are the
// shared client's, not a leak.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		provider.Client.CloseIdleConnections()
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goroutine leak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}
