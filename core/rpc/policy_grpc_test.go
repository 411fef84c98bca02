package rpc_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/wire/apistatus"
)

// Internal services call core over gRPC with the key in metadata; the same policy applies.
func TestCorePolicyOverGRPC(t *testing.T) {
	t.Parallel()
	e := gatewaytest.Start(t, gatewaytest.Options{})
	f := gatewaytest.Setup(t, e)
	conn, err := grpc.NewClient(e.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := corev1.NewCoreServiceClient(conn)
	call := func(key, family, model string) string {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+key, "x-request-id", "grpc-1")
		resp, err := client.Authorize(ctx, &corev1.AuthorizeRequest{EndpointFamily: family, Model: model})
		if err != nil {
			return apistatus.FromError(err).Code
		}
		if resp.GetProfileId() != f.ProfileID || resp.GetRequestId() != "grpc-1" {
			t.Errorf("authorize answer %v", resp)
		}
		return "ok"
	}
	cases := []struct{ name, key, family, model, want string }{
		{"allowed", f.Narrow, "chat.completions", "a-model", "ok"},
		{"model outside the key's list", f.Narrow, "chat.completions", "b-model", "model_not_allowed"},
		{"family outside the key's list", f.Narrow, "responses", "a-model", "endpoint_not_allowed"},
		{"unknown model", f.Wide, "chat.completions", "nope", "model_not_found"},
		{"inactive model", f.Wide, "chat.completions", "retired", "model_not_found"},
		{"model not served on the family", f.Wide, "messages", "a-model", "model_not_found"},
		{"bad key", "sk-gw-bad", "chat.completions", "a-model", "invalid_key"},
	}
	for _, tc := range cases {
		if got := call(tc.key, tc.family, tc.model); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
