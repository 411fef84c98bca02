package gatewaytest

import (
	"net/http"
	"testing"

	"modelgateway/core/simulator"
)

// Gen is a replica serving GenCatalog from a recording simulator, with a profile holding 1000
// of credit and a key that may use everything.
type Gen struct {
	*Gateway
	Up        *Upstream
	Key       string
	ProfileID string
}

// StartGen starts the upstream and a replica (options o), applies GenCatalog and makes the
// profile.
func StartGen(t testing.TB, o Options) *Gen {
	t.Helper()
	up := StartUpstream(t, simulator.Options{})
	g := &Gen{Gateway: Start(t, o), Up: up}
	g.Admin("POST", "/admin/v1/catalog:apply", GenCatalog(up.URL))
	g.Key, g.ProfileID = g.NewProfile("gen", "1000")
	return g
}

// Post sends a JSON body with the profile's key (headers add to or, empty, remove headers) and
// returns status, headers and body; a transport failure fails the test.
func (g *Gen) Post(path string, headers map[string]string, body string) (int, http.Header, []byte) {
	g.t.Helper()
	return g.PostAs(g.Key, path, headers, body)
}

// PostAs is Post with another key.
func (g *Gen) PostAs(key, path string, headers map[string]string, body string) (int, http.Header, []byte) {
	g.t.Helper()
	h := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + key}
	for k, v := range headers {
		h[k] = v
	}
	status, hdr, raw, err := g.Raw("POST", path, h, body)
	if err != nil {
		g.t.Fatalf("POST %s: %v", path, err)
	}
	return status, hdr, raw
}
