package front

import (
	"context"
	"net/http"

	"modelgateway/front/contentgen"
	"modelgateway/front/embeddings"
	"modelgateway/front/media"
)

// Body limits of spec 8 for the image and audio routes.
const (
	limitMediaJSON = 1 << 20
	limitMultipart = 25 << 20
)

// mediaRoutes are the embedding, ranking, moderation, image and audio routes by path. Like the
// generation routes they take POST and a key.
func mediaRoutes(cfg Config) map[string]http.Handler {
	forward := func(family string, limit int64, multipart bool) http.Handler {
		return &media.Handler{Core: cfg.Core, Forward: cfg.Forward, Family: family, Limit: limit, Multipart: multipart}
	}
	return map[string]http.Handler{
		"/v1/embeddings":           &embeddings.Handler{Core: cfg.Core, Limit: limitJSON},
		"/v1/rerank":               forward("rerank", limitJSON, false),
		"/v1/moderations":          forward("moderations", limitJSON, false),
		"/v1/images/generations":   forward("images.generations", limitMediaJSON, false),
		"/v1/images/edits":         forward("images.edits", limitMultipart, true),
		"/v1/images/variations":    forward("images.variations", limitMultipart, true),
		"/v1/audio/speech":         forward("audio.speech", limitMediaJSON, false),
		"/v1/audio/transcriptions": forward("audio.transcriptions", limitMultipart, true),
		"/v1/audio/translations":   forward("audio.translations", limitMultipart, true),
	}
}

func contentEmbed(cfg Config) http.Handler {
	return &contentgen.EmbedHandler{Core: cfg.Core, Limit: limitContent}
}

// Shutdown ends the realtime sessions (close frames sent) within ctx; http.Server.Shutdown
// does not know about upgraded connections.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.realtime.Shutdown(ctx)
}
