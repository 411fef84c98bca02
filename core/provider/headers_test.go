package provider

import (
	"context"
	"io"
	"net/http"
	"reflect"
	"testing"
)

// The headers NewRequest, SetAccept, SetBearer and SetKey build by hand are what Header.Set builds,
// and a later Set or Add on one request changes neither the shared values nor another
// request's headers.
func TestSharedHeadersMatchHeaderSet(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		req, err := NewRequest(context.Background(), "http://upstream.test/v1/chat/completions", []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		SetBearer(req.Header, "sk-upstream")
		SetKey(req.Header, "X-Api-Key", "sk-upstream")
		SetAccept(req.Header, stream)

		want := http.Header{}
		want.Set("content-type", "application/json")
		want.Set("user-agent", UserAgent)
		want.Set("authorization", "Bearer sk-upstream")
		want.Set("x-api-key", "sk-upstream")
		if stream {
			want.Set("accept", "text/event-stream")
		} else {
			want.Set("accept", "application/json")
		}
		if !reflect.DeepEqual(req.Header, want) {
			t.Errorf("stream=%v: headers %v, Header.Set builds %v", stream, req.Header, want)
		}
	}

	a, _ := NewRequest(context.Background(), "http://upstream.test/a", nil)
	b, _ := NewRequest(context.Background(), "http://upstream.test/b", nil)
	SetBearer(a.Header, "sk-upstream")
	SetBearer(b.Header, "sk-upstream")
	SetKey(a.Header, "X-Api-Key", "sk-upstream")
	SetKey(b.Header, "X-Api-Key", "sk-upstream")
	a.Header.Add(HeaderContentType, "text/plain")
	a.Header.Add("X-Api-Key", "other")
	a.Header.Add("Authorization", "Bearer other")
	a.Header.Set(HeaderUserAgent, "other")
	if got := b.Header.Values(HeaderContentType); !reflect.DeepEqual(got, []string{"application/json"}) {
		t.Errorf("another request's Content-Type became %q", got)
	}
	if got := b.Header.Values("Authorization"); !reflect.DeepEqual(got, []string{"Bearer sk-upstream"}) {
		t.Errorf("another request's Authorization became %q", got)
	}
	if got := b.Header.Values("X-Api-Key"); !reflect.DeepEqual(got, []string{"sk-upstream"}) {
		t.Errorf("another request's X-Api-Key became %q", got)
	}
	if got := b.Header.Get(HeaderUserAgent); got != UserAgent {
		t.Errorf("another request's User-Agent became %q", got)
	}
	if got := a.Header.Values(HeaderContentType); !reflect.DeepEqual(got, []string{"application/json", "text/plain"}) {
		t.Errorf("Add on a shared value: %q", got)
	}
}

// NewRequest's body is the encoded bytes, whole, as often as the transport asks for them
// again (GetBody: a retry on a connection the upstream closed while idle); an empty body is
// http.NoBody, as net/http makes it.
func TestNewRequestBodyCanBeSentAgain(t *testing.T) {
	t.Parallel()
	body := []byte(`{"model":"m","messages":[]}`)
	req, err := NewRequest(context.Background(), "http://upstream.test/v1/chat/completions", body)
	if err != nil {
		t.Fatal(err)
	}
	if req.ContentLength != int64(len(body)) || req.Method != http.MethodPost || req.URL.Host != "upstream.test" {
		t.Fatalf("request %s %v, length %d", req.Method, req.URL, req.ContentLength)
	}
	got, _ := io.ReadAll(req.Body)
	for range 2 {
		again, err := req.GetBody()
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(again)
		if string(raw) != string(got) {
			t.Fatalf("GetBody gave %q after %q", raw, got)
		}
	}
	if string(got) != string(body) || req.Body.Close() != nil {
		t.Fatalf("body %q, want %q", got, body)
	}
	empty, err := NewRequest(context.Background(), "http://upstream.test/x", nil)
	if err != nil || empty.Body != http.NoBody || empty.ContentLength != 0 {
		t.Fatalf("an empty body: %v, %v, length %d", err, empty.Body, empty.ContentLength)
	}
}
