package bot

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// `gateway bot --help` lists every variable FromEnv reads (it used to point at the README only).
func TestHelpListsTheEnvironment(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, &out); err != nil {
		t.Fatal(err)
	}
	read := map[string]bool{}
	_, _ = FromEnv(func(name string) string {
		read[name] = true
		if name == "TELEGRAM_BOT_TOKEN" {
			return "t" // so that FromEnv reads on past the token
		}
		return ""
	})
	if len(read) < 10 {
		t.Fatalf("FromEnv read only %v", read)
	}
	for name := range read {
		if !strings.Contains(out.String(), "  "+name+" ") {
			t.Errorf("--help does not list %s:\n%s", name, out.String())
		}
	}
	if err := run(context.Background(), []string{"extra"}, &out); err == nil || !strings.Contains(err.Error(), "--help") {
		t.Errorf("an argument: %v", err)
	}
}
