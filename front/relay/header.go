package relay

import "net/http"

// Header values the front sets on answers are stored as Header.Set would store them (the
// canonical key, a one-element slice), built with fewer allocations: a constant value is one
// slice shared by every answer, and values set together share one backing array. Sharing is
// safe because net/http only reads header values, and Header.Set and Header.Add never write
// into an existing slice (one whose capacity equals its length is copied by append).

var valueJSON = []string{"application/json"}

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
