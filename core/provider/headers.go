package provider

import (
	"net/http"
	"sync"
	"sync/atomic"
)

// The header values every upstream request of a kind carries are built once and shared:
// Header.Set makes a new one-element slice per call, for each request. Sharing is safe
// because net/http only reads a request's header values, and Header.Set and Header.Add
// never write into an existing slice (a slice whose capacity equals its length is copied by
// append). The keys are in canonical form, as Header.Set would store them.
var (
	valueJSON        = []string{"application/json"}
	valueEventStream = []string{"text/event-stream"}
	valueUserAgent   = []string{UserAgent}
)

// SetAccept sets the Accept header of an upstream request: an event stream for a streamed
// answer, JSON otherwise.
func SetAccept(h http.Header, stream bool) {
	if stream {
		h[HeaderAccept] = valueEventStream
	} else {
		h[HeaderAccept] = valueJSON
	}
}

// bearers caches the Authorization values of the provider credentials ("Bearer " + key),
// which every request of a provider repeats. The credentials come from the catalogue's
// environment variables, so there are few of them; past maxBearers (a process whose
// credentials keep changing) further values are built per request instead.
var (
	bearers     sync.Map // credential → []string{"Bearer " + credential}
	bearerCount atomic.Int64
	// keys is bearers for a credential sent as it is (Anthropic's x-api-key).
	keys     sync.Map // credential → []string{credential}
	keyCount atomic.Int64
)

const maxBearers = 256

// SetBearer sets Authorization: Bearer credential on an upstream request.
func SetBearer(h http.Header, credential string) {
	if v, ok := bearers.Load(credential); ok {
		h["Authorization"] = v.([]string)
		return
	}
	v := []string{"Bearer " + credential}
	if bearerCount.Load() < maxBearers {
		if _, loaded := bearers.LoadOrStore(credential, v); !loaded {
			bearerCount.Add(1)
		}
	}
	h["Authorization"] = v
}

// SetKey sets the header key (in canonical form) to credential on an upstream request, the
// one-element value shared as SetBearer's is.
func SetKey(h http.Header, key, credential string) {
	if v, ok := keys.Load(credential); ok {
		h[key] = v.([]string)
		return
	}
	v := []string{credential}
	if keyCount.Load() < maxBearers {
		if _, loaded := keys.LoadOrStore(credential, v); !loaded {
			keyCount.Add(1)
		}
	}
	h[key] = v
}
