package provider

import (
	"context"
	"net/http"
	"strings"
)

// PostForward sends a forwarded request to url: the gateway's own headers, the adapter's
// credential header, and the body streamed with DoUpload.
func PostForward(ctx context.Context, call *ForwardCall, url string, auth func(http.Header)) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, http.NoBody)
	if err != nil {
		return nil, &Error{Message: "bad upstream address", Err: err}
	}
	req.Header.Set(HeaderContentType, call.ContentType)
	req.Header.Set(HeaderUserAgent, UserAgent)
	if call.APIKey != "" {
		auth(req.Header)
	}
	return DoUpload(req, call.Body, call.Timeouts)
}

// Bearer is the credential header of OpenAI-style APIs.
func Bearer(key string) func(http.Header) {
	return func(h http.Header) { h.Set("Authorization", "Bearer "+key) }
}

// Forward implements Forwarder for the simulator, which serves the media and ranking routes
// under its OpenAI-style /v1.
func (n ByClientProtocol) Forward(ctx context.Context, call *ForwardCall) (*http.Response, error) {
	path, ok := FamilyPaths[call.Family]
	if !ok {
		return nil, &Error{Status: http.StatusBadRequest, Message: "the simulator does not serve " + call.Family}
	}
	root := strings.TrimSuffix(strings.TrimRight(call.BaseURL, "/"), "/v1")
	if root == "" {
		root = n.DefaultBase
	}
	return PostForward(ctx, call, root+"/v1"+path, Bearer(call.APIKey))
}
