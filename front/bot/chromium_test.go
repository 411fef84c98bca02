package bot_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Headless Chromium as front/status's page tests drive it (Debian's binary itself, a fresh
// profile per run, no network beyond the page), plus what a Mini App needs: the page's
// script fetches its data after load, so the browser runs on virtual time until the fetches
// are done; and telegram.org does not resolve, so the page is drawn the way it must degrade
// without Telegram's script.

func chromium() string {
	if _, err := os.Stat("/usr/lib/chromium/chromium"); err == nil {
		return "/usr/lib/chromium/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// runChromium runs one headless browser to completion and returns its stdout (the DOM for
// --dump-dom); it kills the browser after 120 s. A browser that died by a signal before
// doing anything skips the test: that says nothing about the page.
func runChromium(t *testing.T, width, height int, args ...string) []byte {
	t.Helper()
	bin := chromium()
	if bin == "" {
		t.Skip("chromium is not installed (apt-get install -y chromium)")
	}
	var crashes []string
	for attempt, extra := range [][]string{nil, {"--single-process"}} {
		profile := filepath.Join(t.TempDir(), fmt.Sprint("profile", attempt))
		cmd := exec.Command(bin, append(append([]string{"--headless", "--no-sandbox", "--no-zygote", "--disable-gpu",
			"--disable-dev-shm-usage", "--disable-crash-reporter", "--disable-breakpad", "--disable-quic",
			"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--disable-extensions", "--hide-scrollbars", "--user-data-dir=" + profile, fmt.Sprintf("--window-size=%d,%d", width, height),
			"--host-resolver-rules=MAP telegram.org ~NOTFOUND", "--virtual-time-budget=20000"}, extra...), args...)...)
		cmd.Env = append(os.Environ(), "HOME="+profile, "XDG_CONFIG_HOME="+profile, "XDG_CACHE_HOME="+profile)
		var out, errs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(120 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("chromium took over 120 s:\n%s", errs.String())
		}
		if err == nil {
			return out.Bytes()
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) && !exit.Exited() {
			crashes = append(crashes, fmt.Sprintf("attempt %d: %v\n%s", attempt+1, err, errs.String()))
			continue
		}
		t.Fatalf("chromium: %v\n%s", err, errs.String())
	}
	t.Skipf("chromium cannot start here:\n%s", strings.Join(crashes, "\n"))
	return nil
}
