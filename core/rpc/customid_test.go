package rpc

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// validCustomID replaced this pattern: it must agree with it on every input.
var customIDPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestValidCustomIDAgreesWithThePattern(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"request-1_A", true},
		{strings.Repeat("z", 64), true},
		{strings.Repeat("z", 65), false},
		{"", false},
		{"a.b", false},
		{"id\n", false},
		{"идент", false},
	} {
		if got := validCustomID(tc.id); got != tc.want || got != customIDPattern.MatchString(tc.id) {
			t.Errorf("validCustomID(%q) = %v, want %v (pattern %v)", tc.id, got, tc.want, customIDPattern.MatchString(tc.id))
		}
	}
	const alphabet = "aZ09_-. \n/é"
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		b := make([]byte, r.IntN(67))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		if got, want := validCustomID(string(b)), customIDPattern.Match(b); got != want {
			t.Fatalf("validCustomID(%q) = %v, the pattern says %v", b, got, want)
		}
	}
}
