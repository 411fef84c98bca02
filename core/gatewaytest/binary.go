package gatewaytest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// mainPackage is the import path of the gateway binary.
const mainPackage = "modelgateway"

var (
	buildOnce sync.Once
	binDir    string
	binary    string
	buildErr  error
)

// Binary is the gateway binary, built on first use by each test binary. Go's build cache keeps
// the linked result, so a package after the first pays a few seconds, not a full link.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "gwbin")
		if buildErr != nil {
			return
		}
		binary = filepath.Join(binDir, "gateway")
		goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goTool); err != nil {
			goTool = "go"
		}
		out, err := exec.Command(goTool, "build", "-o", binary, mainPackage).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build %s: %v: %s", mainPackage, err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

func removeBinary() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}
