package front

import (
	"net/http"
	"strings"

	"modelgateway/core/wire/routes"
	"modelgateway/front/chatcompletions"
	"modelgateway/front/completions"
	"modelgateway/front/contentgen"
	"modelgateway/front/embeddings"
	"modelgateway/front/media"
	"modelgateway/front/messages"
	"modelgateway/front/relay"
	"modelgateway/front/responses"
)

// Body limits of spec 8.
const (
	limitJSON      = 32 << 20 // generation, embeddings, ranking, moderation
	limitContent   = 20 << 20 // every /v1beta action
	limitMediaJSON = 1 << 20  // image generation, speech
	limitMultipart = 25 << 20 // image edits and variations, transcriptions, translations
)

// familyHandlers is the front's one route table: the handler of every POST route by its
// endpoint family, each family named by the package that serves it. The paths are
// core/wire/routes', the table the admission and the telemetry read too.
func familyHandlers(cfg Config) map[string]http.Handler {
	gen := func(p relay.Protocol, family string, limit int64) http.Handler {
		return &relay.Handler{Core: cfg.Core, Generate: cfg.Generate, Proto: p, Limit: limit, Family: family}
	}
	forward := func(family string, limit int64, multipart bool) http.Handler {
		return &media.Handler{Core: cfg.Core, Forward: cfg.Forward, Family: family, Limit: limit, Multipart: multipart}
	}
	return map[string]http.Handler{
		chatcompletions.Family:  gen(chatcompletions.Protocol{}, chatcompletions.Family, limitJSON),
		completions.Family:      gen(completions.Protocol{}, completions.Family, limitJSON),
		responses.Family:        gen(responses.Protocol{Core: cfg.Core}, responses.Family, limitJSON),
		responses.CompactFamily: gen(responses.Protocol{Compact: true, Core: cfg.Core}, responses.CompactFamily, limitJSON),
		messages.Family:         gen(messages.Protocol{}, messages.Family, limitJSON),
		messages.CountFamily:    &relay.CountHandler{Core: cfg.Core, Proto: messages.CountProtocol{}, Limit: limitJSON, Family: messages.CountFamily},

		contentgen.FamilyGenerate: gen(contentgen.Protocol{}, contentgen.FamilyGenerate, limitContent),
		contentgen.FamilyCount:    &relay.CountHandler{Core: cfg.Core, Proto: contentgen.CountProtocol{}, Limit: limitContent, Family: contentgen.FamilyCount},
		contentgen.FamilyEmbed:    &contentgen.EmbedHandler{Core: cfg.Core, Limit: limitContent},

		embeddings.Family:         &embeddings.Handler{Core: cfg.Core, Limit: limitJSON},
		media.Rerank:              forward(media.Rerank, limitJSON, false),
		media.Moderations:         forward(media.Moderations, limitJSON, false),
		media.ImagesGenerations:   forward(media.ImagesGenerations, limitMediaJSON, false),
		media.ImagesEdits:         forward(media.ImagesEdits, limitMultipart, true),
		media.ImagesVariations:    forward(media.ImagesVariations, limitMultipart, true),
		media.AudioSpeech:         forward(media.AudioSpeech, limitMediaJSON, false),
		media.AudioTranscriptions: forward(media.AudioTranscriptions, limitMultipart, true),
		media.AudioTranslations:   forward(media.AudioTranslations, limitMultipart, true),
	}
}

// generation finds the handler of a POST route (generation, counting, embedding, media).
type generation struct {
	byPath   map[string]http.Handler
	byFamily map[string]http.Handler
}

func newGeneration(cfg Config) *generation {
	g := &generation{byPath: map[string]http.Handler{}, byFamily: familyHandlers(cfg)}
	for path, family := range routes.Each {
		if h, ok := g.byFamily[family]; ok { // the realtime socket is served apart
			g.byPath[path] = h
		}
	}
	return g
}

// handler finds the route of a path; nil when the path is not one.
func (g *generation) handler(path string) http.Handler {
	if h, ok := g.byPath[path]; ok {
		return h
	}
	if !strings.HasPrefix(path, "/v1beta/models/") {
		return nil
	}
	_, action, ok := contentgen.SplitPath(path)
	if !ok {
		return nil
	}
	if family, ok := routes.ContentAction(action); ok {
		return g.byFamily[family]
	}
	return nil
}
