package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"google.golang.org/grpc"

	adminv1 "modelgateway/gen/gateway/admin/v1"
	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/rpc"
	"modelgateway/core/statusdata"
	"modelgateway/core/wire/apistatus"
)

// The in-process Authorize runs the error mapping alone: every other interceptor of core's
// unary chain passes Authorize through untouched (the handler called once, with the same
// context and request, its answer and error returned as they are), while the admin token
// and deadline do act on an admin method, and the error mapping does act on Authorize.
func TestAuthorizeLeavesOutOnlyWhatPassesItThrough(t *testing.T) {
	t.Parallel()
	c := newUnaryChain(&statusdata.Recorder{}, slog.New(slog.NewTextHandler(io.Discard, nil)), &rpc.KeyLimiter{}, "admin-token")
	authorize := &grpc.UnaryServerInfo{FullMethod: corev1.CoreService_Authorize_FullMethodName}
	adminMethod := &grpc.UnaryServerInfo{FullMethod: adminv1.AdminService_GetProfile_FullMethodName}
	type ctxKey struct{}
	ctx := context.WithValue(context.Background(), ctxKey{}, "caller")
	req, answer, failure := &corev1.AuthorizeRequest{Model: "m"}, &corev1.AuthorizeResponse{KeyId: "k"}, errors.New("refused")

	// What acts on an admin method: a missing token is refused, a call gets its deadline.
	if _, err := c.auth(ctx, req, adminMethod, func(context.Context, any) (any, error) { return answer, nil }); err == nil {
		t.Fatal("the admin token check let an admin call without a token through")
	}
	if _, err := c.deadline(ctx, req, adminMethod, func(ctx context.Context, _ any) (any, error) {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("an admin call got no deadline")
		}
		return answer, nil
	}); err != nil {
		t.Fatal(err)
	}
	// The mapping acts on Authorize: an error leaves it as a status.
	if _, err := c.errs(ctx, req, authorize, func(context.Context, any) (any, error) { return nil, failure }); err == failure || apistatus.FromError(err).Code == "" {
		t.Errorf("the error mapping left Authorize's error %v as it was", err)
	}
	kept := c.authorize()
	if len(kept) != 1 || len(c.all()) != 5 {
		t.Fatalf("the chain has %d interceptors, Authorize's %d", len(c.all()), len(kept))
	}

	for name, ic := range map[string]grpc.UnaryServerInterceptor{"admin count": c.adminCount, "deadline": c.deadline, "limits": c.limits, "admin token": c.auth} {
		for _, wantErr := range []error{nil, failure} {
			calls := 0
			resp, err := ic(ctx, req, authorize, func(got context.Context, r any) (any, error) {
				calls++
				if got != ctx || r != req {
					t.Errorf("%s: the handler got another context or request", name)
				}
				if wantErr != nil {
					return nil, wantErr
				}
				return answer, nil
			})
			if calls != 1 || err != wantErr || (wantErr == nil && resp != answer) {
				t.Errorf("%s: Authorize ran %d times, answered %v, %v (want %v)", name, calls, resp, err, wantErr)
			}
		}
	}
}
