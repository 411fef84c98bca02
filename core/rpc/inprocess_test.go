package rpc

import (
	"context"
	"reflect"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/callmd"
)

// authorizeServer answers Authorize with what its context carried.
type authorizeServer struct {
	corev1.UnimplementedCoreServiceServer
	sawValue bool
}

type callerKey struct{}

func (s *authorizeServer) Authorize(ctx context.Context, req *corev1.AuthorizeRequest) (*corev1.AuthorizeResponse, error) {
	s.sawValue = ctx.Value(callerKey{}) != nil
	if req.GetModel() == "refused" {
		return nil, status.Error(codes.PermissionDenied, "refused")
	}
	return &corev1.AuthorizeResponse{KeyId: callmd.Bearer(ctx), RequestId: firstMD(ctx, MetadataRequestID)}, nil
}

// The front's Authorize runs the server through the unary chain, outermost first, with the
// caller's metadata as incoming and none of the caller's values, and passes the chain's
// answer and errors back unchanged, call after call.
func TestDirectCoreAuthorizeRunsTheChain(t *testing.T) {
	t.Parallel()
	srv := &authorizeServer{}
	var order []string
	trace := func(name string) grpc.UnaryServerInterceptor {
		return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			order = append(order, name+" "+info.FullMethod)
			return handler(ctx, req)
		}
	}
	c := &DirectCore{Server: srv, Interceptors: []grpc.UnaryServerInterceptor{trace("outer"), trace("inner")}}
	ctx := context.WithValue(context.Background(), callerKey{}, true)
	ctx = metadata.NewOutgoingContext(ctx, metadata.MD{"authorization": {"Bearer sk-1"}, "x-request-id": {"req-1"}})
	for i := range 2 {
		order = nil
		resp, err := c.Authorize(ctx, &corev1.AuthorizeRequest{EndpointFamily: "chat.completions"})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if resp.GetKeyId() != "sk-1" || resp.GetRequestId() != "req-1" {
			t.Errorf("call %d: the server saw key %q and request id %q, want sk-1 and req-1", i, resp.GetKeyId(), resp.GetRequestId())
		}
		want := []string{"outer " + corev1.CoreService_Authorize_FullMethodName, "inner " + corev1.CoreService_Authorize_FullMethodName}
		if len(order) != 2 || order[0] != want[0] || order[1] != want[1] {
			t.Errorf("call %d: interceptors ran as %q, want %q", i, order, want)
		}
		if srv.sawValue {
			t.Errorf("call %d: the server saw a value of the caller's context", i)
		}
	}
	if _, err := c.Authorize(ctx, &corev1.AuthorizeRequest{Model: "refused"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("a refusal: %v, want PermissionDenied", err)
	}
}

// mdServer answers Authorize with the incoming metadata as gRPC's readers see it.
type mdServer struct {
	corev1.UnimplementedCoreServiceServer
	saw      metadata.MD
	sawValue bool
}

func (s *mdServer) Authorize(ctx context.Context, _ *corev1.AuthorizeRequest) (*corev1.AuthorizeResponse, error) {
	s.saw, _ = metadata.FromIncomingContext(ctx)
	s.sawValue = ctx.Value(callerKey{}) != nil
	return &corev1.AuthorizeResponse{KeyId: callmd.Bearer(ctx), RequestId: firstMD(ctx, MetadataRequestID)}, nil
}

// The front's outgoing context (its metadata carried for a direct call without a copy) and a
// plain gRPC one reach the server as the same incoming metadata.
func TestDirectCoreTakesTheFrontsMetadataAsIs(t *testing.T) {
	t.Parallel()
	md := metadata.MD{"authorization": {"Bearer sk-1"}, "x-request-id": {"req-1"}, MetadataRequestIDGenerated: {"1"}}
	base := context.WithValue(context.Background(), callerKey{}, true)
	for name, ctx := range map[string]context.Context{
		"the front's": callmd.NewOutgoingContext(base, md),
		"gRPC's":      metadata.NewOutgoingContext(base, md),
	} {
		srv := &mdServer{}
		c := &DirectCore{Server: srv}
		resp, err := c.Authorize(ctx, &corev1.AuthorizeRequest{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(srv.saw, md) || resp.GetKeyId() != "sk-1" || resp.GetRequestId() != "req-1" {
			t.Errorf("%s: the server saw %v (key %q, id %q)", name, srv.saw, resp.GetKeyId(), resp.GetRequestId())
		}
		if srv.sawValue {
			t.Errorf("%s: the server saw a value of the caller's context", name)
		}
	}
}
