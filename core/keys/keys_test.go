package keys

import (
	"crypto/sha256"
	"strings"
	"testing"
)

func TestSecretsAreRandomAndOnlyTheirHashIdentifiesThem(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 200 {
		s, err := New()
		if err != nil {
			t.Fatal(err)
		}
		if seen[s.Plain] {
			t.Fatal("duplicate secret")
		}
		seen[s.Plain] = true
		if !strings.HasPrefix(s.Plain, s.Prefix) || len(s.Plain) != len(marker)+randomChars || len(s.Prefix) != PrefixLen {
			t.Errorf("secret %q prefix %q", s.Plain, s.Prefix)
		}
		// The prefix is the marker and six random characters: operators compare prefixes
		// of keys issued long ago, so its length is fixed.
		if PrefixLen != len(marker)+6 || len(s.Prefix) != 12 || !strings.HasPrefix(s.Prefix, "sk-gw-") || strings.Trim(s.Plain[len(marker):], alphabet) != "" {
			t.Errorf("secret %q prefix %q: not the marker, six random characters, base62", s.Plain, s.Prefix)
		}
		if Hash(s.Plain) != s.Hash || Hash(s.Plain+"x") == s.Hash {
			t.Error("hash does not identify the secret")
		}
	}
}

// Hash is SHA-256 of the secret's bytes for every length, on either side of the stack
// buffer it hashes ordinary secrets from.
func TestHashIsSHA256OfTheSecret(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 51, 127, 128, 129, 1000} {
		plain := strings.Repeat("k", n)
		if got, want := Hash(plain), sha256.Sum256([]byte(plain)); got != want {
			t.Errorf("length %d: %x, want %x", n, got, want)
		}
	}
}
