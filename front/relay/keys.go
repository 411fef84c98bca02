package relay

import (
	"net/http"
	"strings"
)

// ExtractKey reads the API key by the mechanisms of spec 5: Authorization: Bearer, x-api-key
// and api-key everywhere; x-gen-api-key (and x-goog-api-key, the name the official SDKs send)
// and ?key= only on /v1beta routes.
func ExtractKey(r *http.Request) string {
	if v := r.Header.Get("Authorization"); len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		if k := strings.TrimSpace(v[7:]); k != "" {
			return k
		}
	}
	for _, h := range []string{"X-Api-Key", "Api-Key"} {
		if k := strings.TrimSpace(r.Header.Get(h)); k != "" {
			return k
		}
	}
	if !strings.HasPrefix(r.URL.Path, "/v1beta/") && r.URL.Path != "/v1beta" {
		return ""
	}
	for _, h := range []string{"X-Gen-Api-Key", "X-Goog-Api-Key"} {
		if k := strings.TrimSpace(r.Header.Get(h)); k != "" {
			return k
		}
	}
	return strings.TrimSpace(r.URL.Query().Get("key"))
}
