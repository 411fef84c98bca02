package rpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
)

func incoming(pairs ...string) context.Context {
	return metadata.NewIncomingContext(context.Background(), metadata.Pairs(pairs...))
}

// A client's request id is kept and marked as the client's; the front's own is marked as
// generated; a caller that sent none gets a fresh generated one.
func TestRequestID(t *testing.T) {
	t.Parallel()
	if id, gen, bad := requestID(incoming("x-request-id", "abc")); id != "abc" || gen || bad != nil {
		t.Errorf("client id: %q generated=%v err=%v", id, gen, bad)
	}
	if id, gen, bad := requestID(incoming("x-request-id", "gw-0123456789abcdef0123456789abcdef", "x-request-id-generated", "1")); id != "gw-0123456789abcdef0123456789abcdef" || !gen || bad != nil {
		t.Errorf("front's id: %q generated=%v err=%v", id, gen, bad)
	}
	// The mark alone does not make an id the gateway's: one of a client's form is checked
	// (and reserved) as the client's.
	if id, gen, bad := requestID(incoming("x-request-id", "f-1", "x-request-id-generated", "1")); id != "f-1" || gen || bad != nil {
		t.Errorf("a marked client-form id: %q generated=%v err=%v", id, gen, bad)
	}
	for _, id := range []string{"gw-1", "GW-1", "Gw-abc"} {
		if _, _, bad := requestID(incoming("x-request-id", id)); bad == nil || bad.Code != "invalid_request_error" {
			t.Errorf("a client id of the gateway's form %q is accepted: %v", id, bad)
		}
	}
	if _, _, bad := requestID(incoming("x-request-id", "a b")); bad == nil || bad.Code != "invalid_request_error" {
		t.Errorf("an id with a space (the gateway's derived form) is accepted: %v", bad)
	}
	a, gen, _ := requestID(context.Background())
	b := RequestID(context.Background())
	if !strings.HasPrefix(a, "gw-") || !gen || a == b {
		t.Errorf("fresh ids %q and %q (generated=%v)", a, b, gen)
	}
}

// Spec errors keep their code and carry the request id; anything else is logged and becomes
// internal_error without its message; a cancelled caller is not an internal error; success
// passes through untouched.
func TestErrorInterceptors(t *testing.T) {
	t.Parallel()
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	unary := ErrorInterceptor(log)
	info := &grpc.UnaryServerInfo{FullMethod: "/m"}
	call := func(ctx context.Context, err error) (any, error) {
		return unary(ctx, "req", info, func(context.Context, any) (any, error) {
			if err != nil {
				return nil, err
			}
			return "ok", nil
		})
	}
	ctx := incoming("x-request-id", "rid-1")
	if resp, err := call(ctx, nil); resp != "ok" || err != nil {
		t.Errorf("success: %v %v", resp, err)
	}
	_, err := call(ctx, apierror.New(apierror.ModelNotFound, "no such model"))
	if e := apistatus.FromError(err); e.Code != apierror.ModelNotFound || ridOf(err) != "rid-1" {
		t.Errorf("spec error became %+v", e)
	}
	if logged.Len() != 0 {
		t.Errorf("a spec error was logged: %s", logged.String())
	}
	_, err = call(ctx, errors.New("pq: password authentication failed for secret"))
	if e := apistatus.FromError(err); e.Code != apierror.Internal || strings.Contains(e.Message, "secret") {
		t.Errorf("plain error became %+v", e)
	}
	if !strings.Contains(logged.String(), "rid-1") {
		t.Errorf("the internal error was not logged with its request id: %s", logged.String())
	}
	// PostgreSQL unreachable is the contract's 503 unavailable, whatever wraps it; an error
	// about the data stays internal.
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"a connection the driver closed", fmt.Errorf("credit: %w", pgconn.ErrConnClosed), apierror.Unavailable},
		{"a server shutting down", fmt.Errorf("credit: %w", &pgconn.PgError{Code: "57P01"}), apierror.Unavailable},
		{"a reset socket", fmt.Errorf("credit: %w", &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}), apierror.Unavailable},
		{"a database call past its deadline", fmt.Errorf("credit: %w", context.DeadlineExceeded), apierror.Unavailable},
		{"a unique violation", fmt.Errorf("credit: %w", &pgconn.PgError{Code: "23505"}), apierror.Internal},
	} {
		_, err = call(ctx, c.err)
		if e := apistatus.FromError(err); e.Code != c.want || e.Code == apierror.Unavailable && e.HTTPStatus() != http.StatusServiceUnavailable {
			t.Errorf("%s became %+v, want %s", c.name, e, c.want)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err = call(cancelled, errors.New("context canceled")); apistatus.FromError(err).Code != apierror.InvalidRequest {
		t.Errorf("a cancelled call became %+v", apistatus.FromError(err))
	}

	stream := StreamErrorInterceptor(log)
	ss := &fakeStream{ctx: ctx}
	if err := stream(nil, ss, &grpc.StreamServerInfo{FullMethod: "/s"}, func(any, grpc.ServerStream) error { return nil }); err != nil {
		t.Errorf("stream success: %v", err)
	}
	err = stream(nil, ss, &grpc.StreamServerInfo{FullMethod: "/s"}, func(any, grpc.ServerStream) error {
		return apierror.New(apierror.InsufficientBalance, "low")
	})
	if e := apistatus.FromError(err); e.Code != apierror.InsufficientBalance || ridOf(err) != "rid-1" {
		t.Errorf("stream error became %+v", e)
	}
}

// ridOf is the request id a status carries in its ErrorInfo.
func ridOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetMetadata()["request_id"]
		}
	}
	return ""
}

type fakeStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *fakeStream) Context() context.Context { return s.ctx }
