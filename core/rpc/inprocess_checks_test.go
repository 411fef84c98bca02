package rpc

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"

	"modelgateway/core/snapshot"
	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
	"modelgateway/core/wire/callmd"
)

// headerStream is a server stream that keeps the headers set on it.
type headerStream struct {
	fakeStream
	header metadata.MD
}

func (s *headerStream) SetHeader(md metadata.MD) error {
	s.header = metadata.Join(s.header, md)
	return nil
}

// A front's stream makes the checks of the socket's stream chain without it: the key's
// limits admit it (their headers sent, refused or not; its share released at its end), and
// what the handler returns is mapped as StreamErrorInterceptor maps it (spec errors keep
// their code and carry the request id, anything else is logged and becomes internal_error).
func TestInProcessMakesTheStreamChecks(t *testing.T) {
	t.Parallel()
	e := newCoreEnv(t, 1)
	key, profile := e.profile(t, "10", []string{"*"}, []string{"*"}, 1, 100)
	var logged bytes.Buffer
	p := &InProcess{Log: slog.New(slog.NewTextHandler(&logged, nil)), Limiter: &KeyLimiter{Snapshots: e.holder, Replicas: 1}}
	stream := func() *headerStream {
		return &headerStream{fakeStream: fakeStream{ctx: incoming(MetadataAuthorization, "Bearer "+key, MetadataRequestID, "rid-1")}}
	}

	// One call in flight at a time: a second while the first runs is refused, as 429.
	first, second := stream(), stream()
	ran := false
	err := p.run(generateMethod, first, func(authenticated) error {
		err := p.run(generateMethod, second, func(authenticated) error {
			ran = true
			return nil
		})
		if e := apistatus.FromError(err); e.Code != apierror.RateLimited || e.RetryAfter == 0 || ridOf(err) != "rid-1" {
			t.Errorf("a second call in flight: %+v (request id %q), want rate_limited with a retry", e, ridOf(err))
		}
		return nil
	})
	if err != nil || ran {
		t.Fatalf("the first call: %v; the refused one ran: %v", err, ran)
	}
	if first.header.Get(callmd.RateLimitLimitRequests) == nil || second.header.Get(callmd.RateLimitLimitRequests) == nil {
		t.Errorf("the limits' headers: admitted %v, refused %v", first.header, second.header)
	}
	if p.Running() != 0 {
		t.Errorf("%d calls running after both ended", p.Running())
	}

	// Its share came back: the next call runs, and its errors are mapped.
	err = p.run(generateMethod, stream(), func(authenticated) error { return apierror.New(apierror.InsufficientBalance, "low") })
	if e := apistatus.FromError(err); e.Code != apierror.InsufficientBalance || ridOf(err) != "rid-1" {
		t.Errorf("a spec error became %+v (request id %q)", e, ridOf(err))
	}
	if logged.Len() != 0 {
		t.Errorf("a spec error was logged: %s", logged.String())
	}
	err = p.run(generateMethod, stream(), func(authenticated) error { return errors.New("boom with a secret") })
	if e := apistatus.FromError(err); e.Code != apierror.Internal || strings.Contains(e.Message, "secret") {
		t.Errorf("a plain error became %+v", e)
	}
	if !strings.Contains(logged.String(), "rid-1") || !strings.Contains(logged.String(), generateMethod) {
		t.Errorf("the internal error was not logged with its method and request id: %s", logged.String())
	}

	// The key the limits found goes on to the server that reads the same snapshots, which
	// then does not authenticate it again; to none other, and not when there is no valid key.
	shared := &InProcess{Server: &CoreServer{Snapshots: e.holder}, Limiter: p.Limiter}
	other := &InProcess{Server: &CoreServer{Snapshots: &snapshot.Holder{}}, Limiter: p.Limiter}
	for _, c := range []struct {
		name   string
		p      *InProcess
		stream *headerStream
		found  bool
	}{
		{"the server of the limits' snapshots", shared, stream(), true},
		{"a server of other snapshots", other, stream(), false},
		{"an invalid key", shared, &headerStream{fakeStream: fakeStream{ctx: incoming(MetadataAuthorization, "Bearer sk-nope")}}, false},
	} {
		var got authenticated
		if err := c.p.run(generateMethod, c.stream, func(as authenticated) error { got = as; return nil }); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if found := got.k != nil && got.snap != nil && got.k.ProfileID == profile; found != c.found || got.k == nil && got.snap != nil {
			t.Errorf("%s: the handler got key %v from snapshot %v, want found %v", c.name, got.k, got.snap, c.found)
		}
	}

	// A method that is not a key's request (none of the three is) passes without the limits.
	unlimited := &InProcess{Limiter: &KeyLimiter{Snapshots: e.holder, Replicas: 1}}
	if err := unlimited.run("/not.limited/Method", stream(), func(authenticated) error {
		return unlimited.run("/not.limited/Method", stream(), func(authenticated) error { return nil })
	}); err != nil {
		t.Errorf("an unlimited method: %v", err)
	}
}
