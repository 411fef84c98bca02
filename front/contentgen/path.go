// Package contentgen serves the content-generation protocol (Gemini API v1beta) to clients:
// POST /v1beta/models/{model}:generateContent, :streamGenerateContent (SSE with ?alt=sse, a
// streamed JSON array without it) and :countTokens. It decodes the native request into the
// canonical one and renders canonical events back as GenerateContentResponse chunks.
package contentgen

import "strings"

// Endpoint families (contract.md) and the path actions they serve.
const (
	FamilyGenerate = "content.generate"
	FamilyCount    = "content.count_tokens"

	ActionGenerate = "generateContent"
	ActionStream   = "streamGenerateContent"
	ActionCount    = "countTokens"
)

const pathPrefix = "/v1beta/models/"

// SplitPath splits /v1beta/models/{model}:{action}. Model ids may contain "/" and ":", so the
// action is what follows the last ':'. A leading "models/" in the model (SDKs that prefix
// bare names twice) is stripped.
func SplitPath(path string) (model, action string, ok bool) {
	rest, found := strings.CutPrefix(path, pathPrefix)
	if !found {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return "", "", false
	}
	model, action = strings.TrimPrefix(rest[:i], "models/"), rest[i+1:]
	if model == "" || action == "" || strings.Contains(action, "/") {
		return "", "", false
	}
	return model, action, true
}

// bareModel strips the "models/" resource prefix a body's model may carry.
func bareModel(m string) string { return strings.TrimPrefix(m, "models/") }
