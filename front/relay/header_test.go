package relay

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"google.golang.org/grpc/metadata"

	"modelgateway/core/wire/callmd"
)

// The header helpers store what Header.Set stores, and a later Set or Add on one answer
// changes no other answer's headers.
func TestHeaderHelpersMatchHeaderSet(t *testing.T) {
	t.Parallel()
	got, want := http.Header{}, http.Header{}
	SetJSON(got)
	SetCost(got, "0.020040000", "RUB")
	want.Set("content-type", "application/json")
	want.Set("x-request-cost", "0.020040000")
	want.Set("x-request-currency", "RUB")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("headers %v, Header.Set builds %v", got, want)
	}

	// Without a request state (Begin) and with one, where the value lives.
	var req, resp http.Header
	for _, begun := range []bool{false, true} {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
		r.Header = http.Header{"X-Request-Id": {"client-id"}}
		if begun {
			r = Begin(r, false)
		}
		req, resp = r.Header, http.Header{}
		SetRequestID(r, resp, "id-1")
		wantReq, wantResp := http.Header{"X-Request-Id": {"client-id"}}, http.Header{}
		wantReq.Set("X-Request-Id", "id-1")
		wantResp.Set("X-Request-Id", "id-1")
		if !reflect.DeepEqual(req, wantReq) || !reflect.DeepEqual(resp, wantResp) {
			t.Errorf("begun %v: request %v, answer %v; want %v, %v", begun, req, resp, wantReq, wantResp)
		}
	}

	// Values are shared between answers (JSON) and between a request and its answer (the
	// id); changing one leaves the other alone.
	other := http.Header{}
	SetJSON(other)
	got.Add("Content-Type", "text/plain")
	got.Add("X-Request-Cost", "1")
	resp.Add("X-Request-Id", "id-2")
	if v := other.Values("Content-Type"); !reflect.DeepEqual(v, []string{"application/json"}) {
		t.Errorf("another answer's Content-Type became %q", v)
	}
	if v := got.Values("X-Request-Currency"); !reflect.DeepEqual(v, []string{"RUB"}) {
		t.Errorf("X-Request-Currency became %q after an Add to X-Request-Cost", v)
	}
	if v := req.Values("X-Request-Id"); !reflect.DeepEqual(v, []string{"id-1"}) {
		t.Errorf("the request's id became %q after an Add to the answer's", v)
	}
}

// SetBearer leaves the one form core reads, whatever the client sent: a client's own
// "Bearer <key>" is kept, anything else is rewritten, other key headers and ?key= go.
func TestSetBearerNormalisesTheKey(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, target string
		header       http.Header
		wantQuery    string
	}{
		{"bearer as the front wants it", "/v1/chat/completions", http.Header{"Authorization": {"Bearer sk-1"}}, ""},
		{"lower-case scheme", "/v1/chat/completions", http.Header{"Authorization": {"bearer sk-1"}}, ""},
		{"spaces around the key", "/v1/chat/completions", http.Header{"Authorization": {"Bearer  sk-1 "}}, ""},
		{"x-api-key beside a bearer", "/v1/chat/completions", http.Header{"Authorization": {"Bearer sk-1"}, "X-Api-Key": {"sk-1"}}, ""},
		{"api-key only", "/v1/chat/completions", http.Header{"Api-Key": {"sk-1"}}, ""},
		{"query key", "/v1beta/models/m:generateContent?key=sk-1&alt=sse", http.Header{}, "alt=sse"},
		{"query without a key", "/v1beta/models/m:generateContent?alt=sse", http.Header{"X-Goog-Api-Key": {"sk-1"}}, "alt=sse"},
		{"every key header at once", "/v1beta/models/m:generateContent", http.Header{"X-Api-Key": {"sk-1"}, "Api-Key": {"sk-1"},
			"X-Gen-Api-Key": {"sk-1"}, "X-Goog-Api-Key": {"sk-1"}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("POST", c.target, nil)
			r.Header = c.header
			key := ExtractKey(r)
			if key != "sk-1" {
				t.Fatalf("key %q", key)
			}
			SetBearer(r, key)
			want := http.Header{}
			want.Set("Authorization", "Bearer sk-1")
			if !reflect.DeepEqual(r.Header, want) {
				t.Errorf("headers %v, want %v", r.Header, want)
			}
			if r.URL.RawQuery != c.wantQuery {
				t.Errorf("query %q, want %q", r.URL.RawQuery, c.wantQuery)
			}
		})
	}
}

// requestMD is the metadata of requestPairs, as gRPC's readers get it.
func requestMD(r *http.Request) metadata.MD { return metadata.Pairs(requestPairs(r)...) }

// requestPairs is the metadata the front always sent: the key, the id and, for an id the
// gateway made, the flag that skips the reuse check.
func TestRequestMetadata(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	r.Header.Set("Authorization", "Bearer sk-1")
	r.Header.Set("X-Request-Id", "req-1")
	want := map[string][]string{"authorization": {"Bearer sk-1"}, "x-request-id": {"req-1"}}
	if md := requestMD(r); !reflect.DeepEqual(map[string][]string(md), want) {
		t.Errorf("client id: %v, want %v", md, want)
	}
	want["x-request-id-generated"] = []string{"1"}
	md := requestMD(WithGeneratedID(r))
	if !reflect.DeepEqual(map[string][]string(md), want) {
		t.Errorf("generated id: %v, want %v", md, want)
	}
	kv := requestPairs(WithGeneratedID(r))
	_ = append(kv, "x-more", "1")
	kv = requestPairs(r)
	_ = append(kv, "x-request-id-generated", "0")
	if again := requestMD(WithGeneratedID(r)); !reflect.DeepEqual(map[string][]string(again), want) {
		t.Errorf("after appends to another request's pairs: %v, want %v", again, want)
	}
}

// A request that went through Begin keeps its lease and metadata in one state: the key check
// and the call after it share the metadata while the key and id stay, and a changed key is
// seen.
func TestBeginKeepsTheRequestState(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	r.Header.Set("Authorization", "Bearer sk-1")
	r.Header.Set("X-Request-Id", "req-1")
	r = Begin(r, true)
	want := map[string][]string{"authorization": {"Bearer sk-1"}, "x-request-id": {"req-1"}, "x-request-id-generated": {"1"}}
	first := requestMD(r)
	if !reflect.DeepEqual(map[string][]string(first), want) {
		t.Fatalf("metadata %v, want %v", first, want)
	}
	b := &Budget{Total: 100}
	leased, lease := WithLease(r, b, "key-1", "profile-1")
	if leased != r || leaseOf(leased) != lease {
		t.Fatalf("lease not kept in the request's state: %p %p", leaseOf(leased), lease)
	}
	if err := lease.grow(60); err != nil || b.Used() != 60 {
		t.Fatalf("grow: %v, used %d", err, b.Used())
	}
	lease.Release()
	if b.Used() != 0 {
		t.Fatalf("used %d after release", b.Used())
	}
	if again := requestPairs(leased); &again[0] != &requestPairs(r)[0] || &again[0] != &stateOf(r).pairRoom[0] {
		t.Error("the metadata was built again for the same key and id, or not in the request's state")
	}
	r.Header.Set("Authorization", "Bearer sk-2")
	want["authorization"] = []string{"Bearer sk-2"}
	if md := requestMD(r); !reflect.DeepEqual(map[string][]string(md), want) {
		t.Errorf("after a new key: %v, want %v", md, want)
	}
	client := Begin(httptest.NewRequest("POST", "/v1/chat/completions", nil), false)
	if _, ok := requestMD(client)["x-request-id-generated"]; ok {
		t.Error("a client's id is marked as generated")
	}
}

// A request that went through Begin carries its metadata to core in contexts of its state's
// room, the first of each kind; later ones are made apart and carry the same metadata.
func TestContextsOfTheRequestState(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	r.Header.Set("Authorization", "Bearer sk-1")
	r.Header.Set("X-Request-Id", "req-1")
	r = Begin(r, false)
	in, in2 := IncomingContext(r), IncomingContext(r)
	out, out2 := OutgoingContext(r), OutgoingContext(r)
	if in == in2 || out == out2 {
		t.Fatal("two calls got one context")
	}
	for name, ctx := range map[string]context.Context{"in": in, "in2": in2} {
		if callmd.Value(ctx, "x-request-id") != "req-1" || callmd.Bearer(ctx) != "sk-1" {
			t.Errorf("%s: id %q, key %q", name, callmd.Value(ctx, "x-request-id"), callmd.Bearer(ctx))
		}
	}
	for name, ctx := range map[string]context.Context{"out": out, "out2": out2} {
		if md, ok := callmd.Outgoing(ctx); !ok || !reflect.DeepEqual(md, requestMD(r)) {
			t.Errorf("%s: outgoing %v, want %v", name, md, requestMD(r))
		}
	}
}

// HeaderValue reads a canonical key as Header.Get does: the first value, "" for a field
// absent or without values.
func TestHeaderValueIsGet(t *testing.T) {
	h := http.Header{}
	h.Set("X-Request-Id", "r1")
	h.Add("X-Request-Id", "r2")
	h.Set("Authorization", "")
	h["Api-Key"] = []string{}
	for _, key := range []string{"X-Request-Id", "Authorization", "Api-Key", "X-Api-Key", "Content-Type"} {
		if got, want := HeaderValue(h, key), h.Get(key); got != want {
			t.Errorf("%s: %q, Get %q", key, got, want)
		}
	}
	if HeaderValue(h, "X-Request-Id") != "r1" {
		t.Fatal("not the first value")
	}
}
