package rpc

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc"
)

// ChainStream runs the interceptors outermost first, each with the call's info and a handler
// that runs the next, the last running the call's handler once; an interceptor's error or
// refusal to go on is what the chain returns.
func TestChainStreamRunsInterceptorsInOrder(t *testing.T) {
	t.Parallel()
	refused := errors.New("refused")
	for _, tc := range []struct {
		n, refuseAt int // refuseAt: the interceptor that returns without calling on; -1 none
		want        string
	}{
		{0, -1, "H"},
		{1, -1, "<0H0>"},
		{2, -1, "<0<1H1>0>"},
		{3, -1, "<0<1<2H2>1>0>"},
		{3, 1, "<0<1!0>"},
	} {
		var trace strings.Builder
		info := &grpc.StreamServerInfo{FullMethod: "/m"}
		var ics []grpc.StreamServerInterceptor
		for i := range tc.n {
			d := string(rune('0' + i))
			ics = append(ics, func(srv any, ss grpc.ServerStream, in *grpc.StreamServerInfo, next grpc.StreamHandler) error {
				if in != info {
					t.Errorf("interceptor %d got another info", i)
				}
				trace.WriteString("<" + d)
				if i == tc.refuseAt {
					trace.WriteString("!")
					return refused
				}
				err := next(srv, ss)
				trace.WriteString(d + ">")
				return err
			})
		}
		err := ChainStream(ics...)(nil, nil, info, func(any, grpc.ServerStream) error {
			trace.WriteString("H")
			return nil
		})
		if got := trace.String(); got != tc.want {
			t.Errorf("%d interceptors, refusal at %d: ran %q, want %q", tc.n, tc.refuseAt, got, tc.want)
		}
		if wantErr := tc.refuseAt >= 0; (err != nil) != wantErr || (wantErr && !errors.Is(err, refused)) {
			t.Errorf("%d interceptors, refusal at %d: error %v", tc.n, tc.refuseAt, err)
		}
	}
}
