package admin

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// validBotKey replaced this pattern: it must agree with it on every input.
var botKeyPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,200}$`)

func TestValidBotKeyAgreesWithThePattern(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"state.v1_x-Y9", true},
		{strings.Repeat("a", 200), true},
		{strings.Repeat("a", 201), false},
		{"", false},
		{"a/b", false},
		{"a b", false},
		{"key\n", false},
		{"ключ", false},
		{"a%2Fb", false},
	} {
		if got := validBotKey(tc.key); got != tc.want || got != botKeyPattern.MatchString(tc.key) {
			t.Errorf("validBotKey(%q) = %v, want %v (pattern %v)", tc.key, got, tc.want, botKeyPattern.MatchString(tc.key))
		}
	}
	const alphabet = "aZ09._-/ \n%é"
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, r.IntN(203))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		if got, want := validBotKey(string(b)), botKeyPattern.Match(b); got != want {
			t.Fatalf("validBotKey(%q) = %v, the pattern says %v", b, got, want)
		}
	}
}
