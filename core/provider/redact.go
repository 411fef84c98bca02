package provider

import (
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
)

// Redacted replaces a secret in every upstream string the gateway passes on or logs.
const Redacted = "[redacted]"

// secrets is the process's set of provider credentials, noted as they are read from the
// environment, and the replacer built from it. Credentials are process-wide (environment
// variables), so the set is too.
var secrets struct {
	mu   sync.Mutex
	set  map[string]bool
	repl atomic.Pointer[strings.Replacer]
}

// minSecret is the shortest value treated as a secret: replacing "a" or "1" in messages
// would mangle them and protect nothing.
const minSecret = 8

// NoteSecret adds a provider credential to what Redact hides.
func NoteSecret(s string) {
	if len(s) < minSecret {
		return
	}
	secrets.mu.Lock()
	defer secrets.mu.Unlock()
	if secrets.set[s] {
		return
	}
	if secrets.set == nil {
		secrets.set = map[string]bool{}
	}
	secrets.set[s] = true
	var pairs []string
	for v := range secrets.set {
		pairs = append(pairs, v, Redacted)
	}
	secrets.repl.Store(strings.NewReplacer(pairs...))
}

// clientKey is the shape of a gateway key (core/keys): a client's own key quoted back by an
// upstream (in a prompt it echoes, say) is hidden as well.
var clientKey = regexp.MustCompile(`sk-gw-[0-9A-Za-z]{8,}`)

// Redact hides every noted provider credential and anything shaped like a gateway key in s.
// Every upstream string goes through it before it is forwarded to a client or logged, not
// only the answers to refused credentials: a provider may echo its credential in any error.
func Redact(s string) string {
	if r := secrets.repl.Load(); r != nil {
		s = r.Replace(s)
	}
	if strings.Contains(s, "sk-gw-") {
		s = clientKey.ReplaceAllString(s, Redacted)
	}
	return s
}
