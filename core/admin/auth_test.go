package admin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	adminv1 "modelgateway/gen/gateway/admin/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/callmd"
)

// Behind an ingress every client has the ingress's address. Wrong tokens from it are throttled
// (401 within the burst, then 429 with Retry-After), but the right token always passes at
// once, however many failures came first: a guesser must not lock the operator out.
func TestAdminAuthNeverLocksOutTheRightToken(t *testing.T) {
	t.Parallel()
	const token = "adm-the-right-token-0123456789abcdef"
	auth := Auth(token)
	info := &grpc.UnaryServerInfo{FullMethod: "/" + adminv1.AdminService_ServiceDesc.ServiceName + "/GetProfile"}
	ingress := &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 40000}}
	call := func(p *peer.Peer, tok string) (handled bool, err error) {
		ctx := peer.NewContext(context.Background(), p)
		ctx = metadata.NewIncomingContext(ctx, metadata.Pairs(callmd.Authorization, "Bearer "+tok))
		_, err = auth(ctx, nil, info, func(context.Context, any) (any, error) { handled = true; return "ok", nil })
		return handled, err
	}
	code := func(err error) (string, int) {
		var ae *apierror.Error
		if !errors.As(err, &ae) {
			return fmt.Sprint(err), 0
		}
		return ae.Code, ae.RetryAfter
	}

	// The right token passes before any failure.
	if ok, err := call(ingress, token); !ok || err != nil {
		t.Fatalf("right token first: handled %v, %v", ok, err)
	}
	// Within the burst a wrong token is 401 and never reaches the handler.
	for i := range adminFailureBurst {
		ok, err := call(ingress, fmt.Sprint("wrong-", i))
		if c, _ := code(err); ok || c != apierror.InvalidAdminToken {
			t.Fatalf("wrong token %d: handled %v, %s; want invalid_admin_token", i, ok, c)
		}
	}
	// Past it, wrong tokens (of any length, none at all) are 429 with Retry-After...
	for _, wrong := range []string{"wrong-x", token[:len(token)-1], token + "x", ""} {
		ok, err := call(ingress, wrong)
		if c, after := code(err); ok || c != apierror.RateLimited || after < 1 {
			t.Fatalf("wrong token %q past the burst: handled %v, %s retry-after %d; want rate_limited", wrong, ok, c, after)
		}
	}
	// ...while the right token from the same address passes at once, and again.
	for i := range 3 {
		if ok, err := call(ingress, token); !ok || err != nil {
			t.Fatalf("right token after the failures (%d): handled %v, %v", i, ok, err)
		}
	}
	// The right token's success does not refill the guesser's bucket.
	if _, err := call(ingress, "wrong-again"); err == nil {
		t.Fatal("a wrong token after the right one passed")
	} else if c, _ := code(err); c != apierror.RateLimited {
		t.Fatalf("a wrong token after the right one: %s, want still rate_limited", c)
	}
	// Another address is unaffected: its first wrong token is a plain 401.
	other := &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 8), Port: 40000}}
	if _, err := call(other, "wrong"); err == nil {
		t.Fatal("a wrong token from another address passed")
	} else if c, _ := code(err); c != apierror.InvalidAdminToken {
		t.Fatalf("another address's first wrong token: %s, want invalid_admin_token", c)
	}
}

func TestAdminTokenMatches(t *testing.T) {
	t.Parallel()
	const want = "adm-0123456789abcdef"
	tests := []struct {
		got  string
		want string
		ok   bool
	}{
		{want, want, true},
		{"", want, false},
		{want, "", false}, // no configured token matches nothing, the empty one included
		{"", "", false},
		{want[:len(want)-1], want, false},
		{want + "0", want, false},
		{"ADM-0123456789ABCDEF", want, false},
	}
	for _, tt := range tests {
		if got := TokenMatches(tt.got, tt.want); got != tt.ok {
			t.Errorf("TokenMatches(%q, %q) = %v, want %v", tt.got, tt.want, got, tt.ok)
		}
	}
}
