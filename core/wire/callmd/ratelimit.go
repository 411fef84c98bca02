package callmd

import (
	"net/http"
	"strings"

	"google.golang.org/grpc/metadata"
)

// The rate-limit headers OpenAI's clients read on answers of a limited key. Core sends them
// as gRPC header metadata under the same names; every HTTP front copies them into its answer
// (CopyRateLimit), refusals included.
const (
	RateLimitLimitRequests     = "x-ratelimit-limit-requests"
	RateLimitRemainingRequests = "x-ratelimit-remaining-requests"
	RateLimitResetRequests     = "x-ratelimit-reset-requests"
	RateLimitLimitTokens       = "x-ratelimit-limit-tokens"
	RateLimitRemainingTokens   = "x-ratelimit-remaining-tokens"
	RateLimitResetTokens       = "x-ratelimit-reset-tokens"
)

// rateLimitPrefix begins every rate-limit header; no other metadata core sends does.
const rateLimitPrefix = "x-ratelimit-"

// CopyRateLimit sets the rate-limit entries of md as headers of h; other entries of md are
// not the client's business and stay behind.
func CopyRateLimit(h http.Header, md metadata.MD) {
	for k, v := range md {
		if len(v) > 0 && strings.HasPrefix(k, rateLimitPrefix) {
			h[http.CanonicalHeaderKey(k)] = []string{v[len(v)-1]}
		}
	}
}
