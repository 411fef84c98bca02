package rpc

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"modelgateway/core/provider"
	"modelgateway/core/wire/apierror"
)

// The one map from upstream failures to spec errors: our credentials refused (401/403) is our
// fault (502), the client's own 4xx stays 400, 429 stays 429, timeouts are 504.
func TestUpstreamErrorMapping(t *testing.T) {
	t.Parallel()
	own := apierror.New(apierror.InsufficientBalance, "low")
	cases := []struct {
		name   string
		err    error
		code   string
		status int
	}{
		{"credentials refused: 401", &provider.Error{Status: 401, Message: "bad key"}, apierror.UpstreamError, http.StatusBadGateway},
		{"credentials refused: 403", &provider.Error{Status: 403, Message: "forbidden"}, apierror.UpstreamError, http.StatusBadGateway},
		{"the request's fault: 400", &provider.Error{Status: 400, Message: "bad"}, apierror.UpstreamError, http.StatusBadRequest},
		{"the request's fault: 404", &provider.Error{Status: 404, Message: "no"}, apierror.UpstreamError, http.StatusBadRequest},
		{"the request's fault: 499", &provider.Error{Status: 499, Message: "no"}, apierror.UpstreamError, http.StatusBadRequest},
		{"rate limited", &provider.Error{Status: 429, Message: "slow down"}, apierror.UpstreamError, http.StatusTooManyRequests},
		{"server error", &provider.Error{Status: 500, Message: "boom"}, apierror.UpstreamError, http.StatusBadGateway},
		{"a 3xx is no client error", &provider.Error{Status: 399, Message: "odd"}, apierror.UpstreamError, http.StatusBadGateway},
		{"timeout", &provider.Error{Timeout: true, Message: "no first byte"}, apierror.UpstreamTimeout, http.StatusGatewayTimeout},
		{"wrapped", fmt.Errorf("call: %w", &provider.Error{Status: 403}), apierror.UpstreamError, http.StatusBadGateway},
		{"anything else", errors.New("dial tcp: refused"), apierror.UpstreamError, http.StatusBadGateway},
	}
	for _, c := range cases {
		got := upstreamError(c.err)
		if got.Code != c.code || got.HTTPStatus() != c.status {
			t.Errorf("%s: %s answered %d, want %s answered %d", c.name, got.Code, got.HTTPStatus(), c.code, c.status)
		}
	}
	if got := upstreamError(fmt.Errorf("x: %w", own)); got != own {
		t.Errorf("a spec error is passed on as it is, got %v", got)
	}
}
