package front

import (
	"net/http"
)

// Headers that can carry a client's API key. All of them are removed once the key is read, so
// that a client credential can never travel further than the front.
var keyHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "X-Gen-Api-Key", "X-Goog-Api-Key"}

// setBearer replaces every key-carrying header and the key query parameter with a single
// Authorization: Bearer header, the form core reads.
func setBearer(r *http.Request, key string) {
	for _, h := range keyHeaders {
		r.Header.Del(h)
	}
	r.Header.Set("Authorization", "Bearer "+key)
	if q := r.URL.Query(); q.Has("key") {
		q.Del("key")
		r.URL.RawQuery = q.Encode()
	}
}
