package contentgen

import (
	"net/http/httptest"
	"testing"
)

// Every Google client library parses each SSE data line as JSON, so each must be recognised
// and spared the [DONE] marker; a raw client keeps it.
func TestEveryGoogleClientLibraryGetsGooglesFraming(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		header    string
		userAgent string
		official  bool
	}{
		{"the current SDKs (google-genai-sdk)", "x-goog-api-client", "google-genai-sdk/1.30.0 gl-node/v22.1.0", true},
		{"the legacy @google/generative-ai (genai-js)", "x-goog-api-client", "genai-js/0.24.1", true},
		{"the Python client libraries (gl-python)", "x-goog-api-client", "gl-python/3.12.3 grpc/1.66.1", true},
		{"a Node client library naming only gl-node", "x-goog-api-client", "gl-node/20.20.2", true},
		{"the SDK's label in User-Agent alone", "User-Agent", "google-genai-sdk/1.30.0 gl-go/go1.25", true},
		{"curl", "User-Agent", "curl/8.5.0", false},
		{"a client sending nothing", "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("POST", sseURL, nil)
			if c.header != "" {
				r.Header.Set(c.header, c.userAgent)
			}
			if got := officialSDK(r); got != c.official {
				t.Errorf("officialSDK = %v, want %v", got, c.official)
			}
		})
	}
}
