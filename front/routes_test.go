package front

import (
	"net/http"
	"testing"

	"modelgateway/core/wire/routes"
	"modelgateway/front/media"
	"modelgateway/front/relay"
)

// familyOf is the family a handler checks keys against; "" for handlers that fix their own.
func familyOf(h http.Handler) string {
	switch h := h.(type) {
	case *relay.Handler:
		return h.Family
	case *relay.CountHandler:
		return h.Family
	case *media.Handler:
		return h.Family
	}
	return ""
}

func TestEveryClientRouteHasTheHandlerOfItsFamily(t *testing.T) {
	t.Parallel()
	g := newGeneration(Config{})
	n := 0
	for path, family := range routes.Each {
		if family == "realtime" {
			if g.handler(path) != nil {
				t.Errorf("%s has a POST handler; the realtime socket is served apart", path)
			}
			continue
		}
		n++
		h := g.handler(path)
		if h == nil {
			t.Errorf("%s (%s) has no handler", path, family)
			continue
		}
		if f := familyOf(h); f != "" && f != family {
			t.Errorf("%s is served as %s, want %s", path, f, family)
		}
	}
	if n < 15 {
		t.Errorf("only %d fixed routes", n)
	}
	for path, want := range map[string]string{
		"/v1beta/models/m:generateContent":       "content.generate",
		"/v1beta/models/m:streamGenerateContent": "content.generate",
		"/v1beta/models/m:countTokens":           "content.count_tokens",
	} {
		if h := g.handler(path); h == nil || familyOf(h) != want {
			t.Errorf("%s: handler %T of %q, want %s", path, h, familyOf(h), want)
		}
	}
	for _, path := range []string{"/v1beta/models/m:embedContent", "/v1beta/models/m:batchEmbedContents"} {
		if g.handler(path) == nil {
			t.Errorf("%s has no handler", path)
		}
	}
	for _, path := range []string{"/v1beta/models/m:nope", "/v1beta/models/m", "/v1/nope", "/v1/models"} {
		if h := g.handler(path); h != nil {
			t.Errorf("%s is routed to %T", path, h)
		}
	}
}
