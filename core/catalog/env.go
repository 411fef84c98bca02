package catalog

import "strings"

// The gateway sends the value of a provider's api_key_env to that provider's base_url, which
// the catalogue author chooses. A variable the gateway (or the Go runtime under it) reads for
// itself would hand the gateway's own secrets to that address: the database password, the
// admin token, the bot token, an OTLP header, a proxy's credentials. GatewayEnv names them,
// so that no catalogue can point a provider at one (contract.md, "Catalog document").

// gatewayEnvPrefixes are the families of variables the gateway reads. PG covers libpq's
// (PGPASSWORD, PGSSLKEY, ...), which pgx honours beside DATABASE_URL.
var gatewayEnvPrefixes = []string{"GATEWAY_", "TELEGRAM_", "OTEL_", "PG"}

// gatewayEnvNames are single variables read by the gateway, its tests' harness or the Go
// runtime and standard library it runs on.
var gatewayEnvNames = []string{
	"DATABASE_URL", "TEST_DATABASE_URL",
	"PATH", "HOME", "USER", "SHELL", "PWD", "TMPDIR", "TZ", "SOURCE_DATE_EPOCH",
	// net/http's proxy settings may carry credentials (http://user:pass@proxy).
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "REQUEST_METHOD",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
	"GODEBUG", "GOGC", "GOMAXPROCS", "GOMEMLIMIT", "GOTRACEBACK",
}

// GatewayEnv reports whether name is a variable the gateway itself reads, and so may never
// be a provider's api_key_env; the second result is the rule it falls under, for messages.
// Names are compared without regard to case: lower-case proxy variables are read too, and
// on a system whose environment ignores case they are the same variable.
func GatewayEnv(name string) (string, bool) {
	upper := strings.ToUpper(name)
	for _, p := range gatewayEnvPrefixes {
		if strings.HasPrefix(upper, p) {
			return p + "*", true
		}
	}
	for _, n := range gatewayEnvNames {
		if upper == n {
			return n, true
		}
	}
	return "", false
}

// checkKeyEnv checks a provider's api_key_env: required where there is an upstream, a
// variable name, and not one the gateway itself reads. The message names the variable only,
// never its value: the value may be a secret.
// A pool (a list) is checked entry by entry: every credential of it is sent to the provider.
func (ps *problems) checkKeyEnv(path string, p Provider, needsUpstream bool) {
	if len(p.APIKeyPool) == 0 {
		ps.checkOneKeyEnv(field(path, "api_key_env"), p.ID, p.APIKeyEnv, needsUpstream)
		return
	}
	seen := map[string]bool{}
	for i, name := range p.APIKeyPool {
		ip := index(field(path, "api_key_env"), i)
		ps.checkOneKeyEnv(ip, p.ID, name, true)
		if seen[name] {
			ps.addf(ip, "%q is listed twice", name)
		}
		seen[name] = true
	}
}

func (ps *problems) checkOneKeyEnv(path, provider, name string, required bool) {
	switch {
	case name == "" && required:
		ps.addf(path, "is required (the name of the environment variable holding the key)")
	case name != "" && !envName.MatchString(name):
		ps.addf(path, "%q is not an environment variable name", name)
	default:
		if rule, ok := GatewayEnv(name); ok {
			ps.addf(path, "%q of provider %q is a variable the gateway itself reads (%s), and its value would be sent to the provider; name a variable that holds only this provider's key",
				name, provider, rule)
		}
	}
}
