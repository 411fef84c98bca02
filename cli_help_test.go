package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every command answers -h and --help with its flags (or its fields and environment) and exit
// status 0; `gateway admin create-key --help` used to fail with "use --help=value", and
// `gateway version` was an unknown command. Not parallel: it redirects os.Stdout and os.Stderr,
// where the flag package prints.
func TestEveryCommandAnswersHelp(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--help"}, "-http-addr"},
		{[]string{"migrate", "-h"}, "-database-url"},
		{[]string{"apply", "--help"}, "-f string"},
		{[]string{"admin", "--help"}, "-grpc-addr"},
		{[]string{"admin", "create-key", "--help"}, "--profile_id=STRING"},
		{[]string{"dev", "--help"}, "-data string"},
		{[]string{"simulator", "--help"}, "-first-byte"},
		{[]string{"verify", "--help"}, "-grpc-addr"},
		{[]string{"verify", "-h"}, "-http-addr"},
		{[]string{"bot", "--help"}, "TELEGRAM_BOT_TOKEN"},
		{[]string{"bench", "--help"}, "-duration"},
		{[]string{"bare-proxy", "--help"}, "-target"},
		{[]string{"version"}, "commit "},
		{[]string{"--version"}, "built "},
		{[]string{"--help"}, "version"},
	}
	for _, tc := range tests {
		code, out := runCaptured(t, tc.args)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("gateway %s: exit %d, output lacks %q:\n%s", strings.Join(tc.args, " "), code, tc.want, out)
		}
	}
	if code, out := runCaptured(t, []string{"no-such-command"}); code != 2 || !strings.Contains(out, "unknown command") {
		t.Errorf("unknown command: exit %d, %s", code, out)
	}
	if code, _ := runCaptured(t, []string{"serve", "--no-such-flag"}); code != 1 {
		t.Errorf("a wrong flag: exit %d, want 1", code)
	}
}

// runCaptured runs a command line in process and returns its exit status and everything it
// printed on stdout and stderr.
func runCaptured(t *testing.T, args []string) (int, string) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stdout, stderr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = f, f
	var buf bytes.Buffer
	code := runCommand(context.Background(), args[0], args[1:], &buf, &buf)
	os.Stdout, os.Stderr = stdout, stderr
	printed, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return code, buf.String() + string(printed)
}
