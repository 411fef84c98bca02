package relay

import (
	"context"
	"net/http"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
)

// ExtractKey reads the API key by the mechanisms of spec 5: Authorization: Bearer, x-api-key
// and api-key everywhere; x-gen-api-key (and x-goog-api-key, the name the official SDKs send)
// and ?key= only on /v1beta routes.
func ExtractKey(r *http.Request) string {
	if v := HeaderValue(r.Header, "Authorization"); len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		if k := strings.TrimSpace(v[7:]); k != "" {
			return k
		}
	}
	for _, h := range []string{"X-Api-Key", "Api-Key"} {
		if k := strings.TrimSpace(HeaderValue(r.Header, h)); k != "" {
			return k
		}
	}
	if !strings.HasPrefix(r.URL.Path, "/v1beta/") && r.URL.Path != "/v1beta" {
		return ""
	}
	for _, h := range []string{"X-Gen-Api-Key", "X-Goog-Api-Key"} {
		if k := strings.TrimSpace(HeaderValue(r.Header, h)); k != "" {
			return k
		}
	}
	return strings.TrimSpace(r.URL.Query().Get("key"))
}

// Headers that can carry a client's API key. All of them are removed once the key is read, so
// that a client credential can never travel further than the front.
var keyHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "X-Gen-Api-Key", "X-Goog-Api-Key"}

// DropKeyHeaders removes every header that can carry a key (a public route passes none on).
// The names are canonical, as net/http keeps a request's header names: deleted as they are,
// without Del's canonicalization of each.
func DropKeyHeaders(h http.Header) {
	for _, name := range keyHeaders {
		delete(h, name)
	}
}

const bearerPrefix = "Bearer "

// SetBearer replaces every key-carrying header and the key query parameter with a single
// Authorization: Bearer header, the form core reads.
func SetBearer(r *http.Request, key string) {
	// Most clients send exactly "Authorization: Bearer <key>": that value is kept as it is
	// rather than built again.
	v := r.Header["Authorization"]
	rest, bearer := "", false
	if len(v) == 1 {
		rest, bearer = strings.CutPrefix(v[0], bearerPrefix)
	}
	same := bearer && rest == key
	DropKeyHeaders(r.Header)
	if same {
		r.Header["Authorization"] = v
	} else {
		r.Header["Authorization"] = []string{bearerPrefix + key}
	}
	if r.URL.RawQuery == "" {
		return // nothing to parse (Query would make an empty map)
	}
	if q := r.URL.Query(); q.Has("key") {
		q.Del("key")
		r.URL.RawQuery = q.Encode()
	}
}

// KeyFirst returns the key's error when the key may not call the family at all, else
// bodyErr; ctx is an OutgoingContext. A request refused after its key passed has its
// client-sent request id taken all the same (contract: an id is taken when its request
// passes the key checks), so the refusal costs a database write on this path only.
func KeyFirst(ctx context.Context, core corev1.CoreServiceClient, family string, bodyErr *apierror.Error) *apierror.Error {
	// Not cancelled with the request: a body that failed because the connection did (a
	// timeout) still gets its proper answer; the check is an in-memory lookup.
	if _, err := core.Authorize(context.WithoutCancel(ctx), &corev1.AuthorizeRequest{EndpointFamily: family, TakeRequestId: true}); err != nil {
		return apistatus.FromError(err)
	}
	return bodyErr
}
