package relay

import "net/http"

// Header values the front sets on answers are stored as Header.Set would store them (the
// canonical key, a one-element slice), built with fewer allocations: a constant value is one
// slice shared by every answer, and values set together share one backing array. Sharing is
// safe because net/http only reads header values, and Header.Set and Header.Add never write
// into an existing slice (one whose capacity equals its length is copied by append).

var valueJSON = []string{"application/json"}

// HeaderValue is h.Get(key) for a key in canonical form (a constant such as "X-Request-Id"):
// the map read without Get's check and canonicalisation of the key, which cost more than the
// read on every request's few headers. Headers are stored under canonical keys (the servers
// and Header.Set store them so), where Get looks too.
func HeaderValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// SetJSON sets Content-Type: application/json.
func SetJSON(h http.Header) { h["Content-Type"] = valueJSON }

// SetRequestID sets X-Request-Id to id on both the client's request (where core reads it) and
// the answer, one value for both; in the request's state (Begin) when it has one, rather than
// an allocation of its own.
func SetRequestID(r *http.Request, w http.Header, id string) {
	var v []string
	if st := stateOf(r); st != nil {
		st.idValue[0] = id
		v = st.idValue[:1:1]
	} else {
		v = []string{id}
	}
	r.Header["X-Request-Id"] = v
	w["X-Request-Id"] = v
}

// SetCost sets X-Request-Cost and X-Request-Currency, the charge of an answer.
func SetCost(h http.Header, cost, currency string) {
	v := [...]string{cost, currency}
	h["X-Request-Cost"] = v[0:1:1]
	h["X-Request-Currency"] = v[1:2:2]
}
