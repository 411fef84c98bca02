package status

import (
	"os"
	"strings"
	"testing"
)

// /docs and the README state the same error table and limits: the facts live once in
// docs.go, and this test fails when the README drifts from them.
func TestREADMEAgreesWithDocs(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	row := func(prefix, contains string) bool {
		for _, l := range lines {
			if (l == prefix || strings.HasPrefix(l, prefix+" ") || strings.HasPrefix(l, prefix+"|")) && strings.Contains(l, contains) {
				return true
			}
		}
		return false
	}
	for _, e := range Errors {
		if !row("| "+e.Code, "| "+e.HTTP) {
			t.Errorf("README has no error row for %s with HTTP %s", e.Code, e.HTTP)
		}
	}
	for _, l := range Limits {
		if !row("| "+l.Limit+" | "+l.Value+" | "+l.AppliesTo+" |", "") {
			t.Errorf("README has no limit row %q = %s for %s", l.Limit, l.Value, l.AppliesTo)
		}
	}
}
