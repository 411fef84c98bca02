package relay

// What travels from an HTTP request to core beside the message: the key and the request id,
// as gRPC metadata.

import (
	"context"
	"net/http"

	"google.golang.org/grpc/metadata"

	"modelgateway/core/wire/callmd"
)

// IncomingContext is OutgoingContext as the server side of an in-process call sees it, with
// the metadata where core reads it without copies (core/wire/callmd).
func IncomingContext(r *http.Request) context.Context {
	return callmd.NewIncomingContext(r.Context(), requestMD(r))
}

// OutgoingContext carries the key and request id to core as gRPC metadata; a direct call
// (the key check) takes them back without a copy (core/wire/callmd).
func OutgoingContext(r *http.Request) context.Context {
	return callmd.NewOutgoingContext(r.Context(), requestMD(r))
}

// requestMD is the metadata of a request, built at once: appending pairs to a context
// (metadata.AppendToOutgoingContext) copies them again for every reader.
// The values share one backing array, and the generated flag's value is one slice for every
// request: metadata readers copy what they read (metadata.ValueFromIncomingContext) and never
// write into a value, and each slice's capacity is its length, so an append copies it.
// A request that went through Begin builds it once: the key check and the call that follows
// take the same metadata while the key and the id are the same.
func requestMD(r *http.Request) metadata.MD {
	auth, id := r.Header.Get("Authorization"), r.Header.Get("X-Request-Id")
	st := stateOf(r)
	if st != nil && st.md != nil && st.auth == auth && st.id == id {
		return st.md
	}
	// The values live in the request's state when it has one and they are its first: a
	// metadata built before must keep its own.
	var v *[2]string
	if st != nil && st.md == nil {
		v = &st.mdValues
	} else {
		v = new([2]string)
	}
	*v = [2]string{auth, id}
	md := metadata.MD{
		"authorization": v[0:1:1],
		"x-request-id":  v[1:2:2],
	}
	if generated, _ := r.Context().Value(generatedKey{}).(bool); generated {
		md["x-request-id-generated"] = valueGenerated
	}
	if st != nil {
		st.md, st.auth, st.id = md, auth, id
	}
	return md
}

var valueGenerated = []string{"1"}

type generatedKey struct{}

// WithGeneratedID marks a request whose id the gateway made itself: core need not check such
// an id for reuse.
func WithGeneratedID(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), generatedKey{}, true))
}

// Begin attaches what the front keeps of a request while it serves it, in one context node
// (one copy of the request) rather than a node and a copy per value: whether the gateway made
// its id (as WithGeneratedID), its body lease (WithLease) and its metadata (requestMD).
func Begin(r *http.Request, generated bool) *http.Request {
	return r.WithContext(&state{Context: r.Context(), generated: generated})
}

type stateKey struct{}

// state is a request's context node made by Begin. Its fields are set while the request is
// served, in the handler's goroutine, before anything reads them from another goroutine.
type state struct {
	context.Context
	generated bool
	lease     Lease
	leased    bool
	// md is the request's metadata as built for auth and id (requestMD).
	md       metadata.MD
	auth, id string
	mdValues [2]string // md's values, in this allocation (requestMD)
	idValue  [1]string // the X-Request-Id value (SetRequestID)
}

func (s *state) Value(k any) any {
	switch k.(type) {
	case stateKey:
		return s
	case generatedKey:
		if s.generated {
			return true
		}
	case leaseKey:
		if s.leased {
			return &s.lease
		}
	}
	return s.Context.Value(k)
}

func stateOf(r *http.Request) *state {
	if s, ok := r.Context().(*state); ok {
		return s
	}
	s, _ := r.Context().Value(stateKey{}).(*state)
	return s
}
