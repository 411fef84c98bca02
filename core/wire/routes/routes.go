// Package routes names the endpoint family (contract.md, "Endpoint family identifiers") of
// each client route: the one table that the front's admission and the telemetry's labels
// read.
package routes

// fixed are the routes whose path alone names the family.
var fixed = map[string]string{
	"/v1/chat/completions":      "chat.completions",
	"/v1/completions":           "completions",
	"/v1/responses":             "responses",
	"/v1/responses/compact":     "responses.compact",
	"/v1/messages":              "messages",
	"/v1/messages/count_tokens": "messages.count_tokens",
	"/v1/embeddings":            "embeddings",
	"/v1/rerank":                "rerank",
	"/v1/moderations":           "moderations",
	"/v1/images/generations":    "images.generations",
	"/v1/images/edits":          "images.edits",
	"/v1/images/variations":     "images.variations",
	"/v1/audio/speech":          "audio.speech",
	"/v1/audio/transcriptions":  "audio.transcriptions",
	"/v1/audio/translations":    "audio.translations",
	"/v1/realtime":              "realtime",
}

// Each yields every route whose path alone names the family, with that family.
func Each(yield func(path, family string) bool) {
	for p, f := range fixed {
		if !yield(p, f) {
			return
		}
	}
}

// Fixed is the family of a route whose path names it; false for every other path.
func Fixed(path string) (string, bool) {
	f, ok := fixed[path]
	return f, ok
}

// ContentAction is the family of a content-generation action (`/v1beta/models/{m}:{action}`);
// false for an action that does not exist.
func ContentAction(action string) (string, bool) {
	switch action {
	case "generateContent", "streamGenerateContent":
		return "content.generate", true
	case "countTokens":
		return "content.count_tokens", true
	case "embedContent", "batchEmbedContents":
		return "content.embed", true
	}
	return "", false
}
