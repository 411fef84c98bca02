package relay

// What travels from an HTTP request to core beside the message: the key and the request id,
// as gRPC metadata.

import (
	"context"
	"net/http"

	"modelgateway/core/wire/callmd"
)

// IncomingContext is OutgoingContext as the server side of an in-process call sees it, with
// the metadata where core reads it without copies (core/wire/callmd).
func IncomingContext(r *http.Request) context.Context {
	if st := stateOf(r); st != nil {
		return st.room.IncomingPairs(r.Context(), requestPairs(r))
	}
	return callmd.NewIncomingPairs(r.Context(), requestPairs(r))
}

// OutgoingContext carries the key and request id to core as gRPC metadata; a direct call
// (the key check) takes them back without a copy (core/wire/callmd).
func OutgoingContext(r *http.Request) context.Context {
	if st := stateOf(r); st != nil {
		return st.room.OutgoingPairs(r.Context(), requestPairs(r))
	}
	return callmd.NewOutgoingPairs(r.Context(), requestPairs(r))
}

// requestPairs is the metadata of a request as key, value pairs (callmd carries them as they
// are: core reads the key and the id from them, and gRPC readers get a map made when they
// ask), built at once: appending pairs to a context (metadata.AppendToOutgoingContext) copies
// them again for every reader. A request that went through Begin builds them once, in its
// state: the key check and the call that follows take the same pairs while the key and the
// id are the same.
func requestPairs(r *http.Request) []string {
	auth, id := HeaderValue(r.Header, "Authorization"), HeaderValue(r.Header, "X-Request-Id")
	st := stateOf(r)
	if st != nil && st.pairs != nil && st.auth == auth && st.id == id {
		return st.pairs
	}
	// The pairs live in the request's state when it has one and they are its first: pairs
	// handed out before must keep theirs.
	var room *[6]string
	if st != nil && st.pairs == nil {
		room = &st.pairRoom
	} else {
		room = new([6]string)
	}
	*room = [6]string{"authorization", auth, "x-request-id", id, "x-request-id-generated", "1"}
	kv := room[:4:4]
	if generated, _ := r.Context().Value(generatedKey{}).(bool); generated {
		kv = room[:6:6]
	}
	if st != nil {
		st.pairs, st.auth, st.id = kv, auth, id
	}
	return kv
}

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
	s := &state{Context: r.Context(), generated: generated}
	// The request's copy lives in the state's allocation: WithContext's own copy, inlined
	// and not kept, stays on the stack.
	s.req = *r.WithContext(s)
	return &s.req
}

type stateKey struct{}

// state is a request's context node made by Begin. Its fields are set while the request is
// served, in the handler's goroutine, before anything reads them from another goroutine.
type state struct {
	context.Context
	generated bool
	lease     Lease
	leased    bool
	// pairs is the request's metadata as built for auth and id (requestPairs), in pairRoom.
	pairs    []string
	auth, id string
	pairRoom [6]string
	idValue  [1]string // the X-Request-Id value (SetRequestID)
	// room holds the first contexts that carry the metadata to core (IncomingContext,
	// OutgoingContext) and the key check's server context.
	room callmd.Room
	// req is the request under this context (Begin).
	req http.Request
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
