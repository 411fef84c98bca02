package front

import (
	"net/http"
	"strings"

	"modelgateway/front/contentgen"
)

// googleV1 serves the content-generation protocol on the v1 paths too. Google's current SDK
// (@google/genai 3.x) calls the stable v1 API by default, /v1/models/{model}:{action}, where
// the gateway's routes are under /v1beta; the bodies and answers are the same. POSTs with a
// content-generation action are unambiguous. The model list and lookup share their path with
// the chat-completions form, so they get the content-generation form only when a Google client
// library identifies itself (x-goog-api-client, which every one of them sends).
func googleV1(r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/models")
	if !ok || rest != "" && rest[0] != '/' {
		return
	}
	switch {
	case r.Method == http.MethodPost && rest != "":
		if _, _, ok := contentgen.SplitPath("/v1beta/models" + rest); !ok {
			return
		}
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && strings.TrimSpace(r.Header.Get("X-Goog-Api-Client")) != "":
	default:
		return
	}
	r.URL.Path, r.URL.RawPath = "/v1beta/models"+rest, ""
}
