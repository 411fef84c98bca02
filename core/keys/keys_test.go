package keys

import (
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
		if Hash(s.Plain) != s.Hash || Hash(s.Plain+"x") == s.Hash {
			t.Error("hash does not identify the secret")
		}
	}
}
