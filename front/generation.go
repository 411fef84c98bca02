package front

import (
	"maps"
	"net/http"
	"strings"

	"modelgateway/core/wire/apierror"
	"modelgateway/front/chatcompletions"
	"modelgateway/front/completions"
	"modelgateway/front/contentgen"
	"modelgateway/front/messages"
	"modelgateway/front/relay"
	"modelgateway/front/responses"
)

// Body limits of spec 8.
const (
	limitJSON    = 32 << 20 // generation, embeddings, ranking, moderation
	limitContent = 20 << 20 // every /v1beta action
)

// generation holds the text-generation routes, one handler per route.
type generation struct {
	byPath       map[string]http.Handler
	content      http.Handler // :generateContent and :streamGenerateContent
	contentCount http.Handler // :countTokens
	contentEmbed http.Handler // :embedContent and :batchEmbedContents
}

func newGeneration(cfg Config) *generation {
	h := func(p relay.Protocol, family string, limit int64) http.Handler {
		return &relay.Handler{Core: cfg.Core, Generate: cfg.Generate, Proto: p, Limit: limit, Family: family}
	}
	g := &generation{
		byPath: map[string]http.Handler{
			"/v1/chat/completions":      h(chatcompletions.Protocol{}, "chat.completions", limitJSON),
			"/v1/completions":           h(completions.Protocol{}, "completions", limitJSON),
			"/v1/responses":             h(responses.Protocol{}, "responses", limitJSON),
			"/v1/responses/compact":     h(responses.Protocol{Compact: true}, "responses.compact", limitJSON),
			"/v1/messages":              h(messages.Protocol{}, "messages", limitJSON),
			"/v1/messages/count_tokens": &relay.CountHandler{Core: cfg.Core, Proto: messages.CountProtocol{}, Limit: limitJSON, Family: "messages.count_tokens"},
		},
		content:      h(contentgen.Protocol{}, "content.generate", limitContent),
		contentCount: &relay.CountHandler{Core: cfg.Core, Proto: contentgen.CountProtocol{}, Limit: limitContent, Family: "content.count_tokens"},
		contentEmbed: contentEmbed(cfg),
	}
	maps.Copy(g.byPath, mediaRoutes(cfg))
	return g
}

// handler finds the generation route of a path; nil when the path is not one.
func (g *generation) handler(path string) http.Handler {
	if h, ok := g.byPath[path]; ok {
		return h
	}
	if !strings.HasPrefix(path, "/v1beta/models/") {
		return nil
	}
	switch _, action, ok := contentgen.SplitPath(path); {
	case !ok:
		return nil
	case action == "generateContent" || action == "streamGenerateContent":
		return g.content
	case action == "countTokens":
		return g.contentCount
	case action == "embedContent" || action == "batchEmbedContents":
		return g.contentEmbed
	}
	return nil
}

// serveGeneration runs a generation route: POST only, key required and normalised.
func (s *Server) serveGeneration(w http.ResponseWriter, r *http.Request, h http.Handler) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		relay.WriteError(w, r, apierror.New(apierror.MethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
		return
	}
	key := relay.ExtractKey(r)
	if key == "" {
		relay.WriteError(w, r, apierror.New(apierror.InvalidKey, "no API key was provided"))
		return
	}
	relay.SetBearer(r, key)
	r, release := s.admit(w, r, h)
	if r == nil {
		return
	}
	defer release()
	h.ServeHTTP(w, r)
}
