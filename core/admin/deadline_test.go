package admin

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc"

	adminv1 "modelgateway/gen/gateway/admin/v1"

	"modelgateway/core/rpc"
	"modelgateway/core/wire/apistatus"
)

// An admin RPC whose database call outlasts the deadline answers unavailable (a frozen
// database), the upstream probes of VerifyCapabilities and other services keep their time.
func TestAdminDeadline(t *testing.T) {
	t.Parallel()
	chain := rpc.Chain(rpc.ErrorInterceptor(slog.New(slog.NewTextHandler(io.Discard, nil))), Deadline(20*time.Millisecond))
	waitsForTheDatabase := func(ctx context.Context, _ any) (any, error) {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("get profile: %w", ctx.Err())
		case <-time.After(10 * time.Second):
			return "answered", nil
		}
	}
	for _, c := range []struct {
		name, method string
		bounded      bool
	}{
		{"an admin call is bounded", adminv1.AdminService_GetProfile_FullMethodName, true},
		{"capability probes are not", adminv1.AdminService_VerifyCapabilities_FullMethodName, false},
		{"other services are not", "/gateway.core.v1.CoreService/Embed", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			_, err := chain(ctx, nil, &grpc.UnaryServerInfo{FullMethod: c.method}, waitsForTheDatabase)
			took := time.Since(start)
			if !c.bounded {
				// Cut only by the caller's own 2 s deadline.
				if took < 1500*time.Millisecond {
					t.Fatalf("cut after %v: %v", took, err)
				}
				return
			}
			if took > time.Second {
				t.Fatalf("bounded call took %v", took)
			}
			if code := apistatus.FromError(err).Code; code != "unavailable" {
				t.Fatalf("code %q (%v), want unavailable", code, err)
			}
		})
	}
}
