package provider

import (
	"context"
	"io"
	"net/http"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
)

// Upstream is where one attempt goes: the provider's address and credential and the model
// names on both sides.
type Upstream struct {
	// PublicModel is what the client asked for and sees in answers; UpstreamModel is what the
	// provider is sent.
	PublicModel, UpstreamModel string
	// BaseURL is exactly what the provider's official SDK takes as its base URL (contract.md).
	BaseURL string
	// APIKey is the provider credential from the environment; empty sends none.
	APIKey   string
	Timeouts Timeouts
}

// EmbedCall is one embedding attempt at one upstream.
type EmbedCall struct {
	Upstream
	Request *corev1.EmbedRequest
}

// EmbedResult is an upstream's embedding answer.
type EmbedResult struct {
	// NativeBody is set when the upstream spoke the client's protocol: its answer with the
	// public model restored, for the front to send as it is.
	NativeBody []byte
	// Vectors holds one vector per input text, in order, when the answer was translated.
	Vectors [][]float32
	// Usage is what the upstream reported (input tokens only); unreliable when it reported
	// nothing, so that core counts the input itself.
	Usage metering.Usage
}

// Embedder is an adapter that can embed: kinds openai and gemini.
type Embedder interface {
	Embed(ctx context.Context, call *EmbedCall) (*EmbedResult, error)
}

// ForwardCall is one attempt at relaying a media or ranking request (rerank, moderations,
// images, audio). Core builds the body (the model rewritten, a multipart form streamed part
// by part); the adapter only knows where it goes and how to authenticate.
type ForwardCall struct {
	Upstream
	// Family is the endpoint family, e.g. "audio.transcriptions".
	Family string
	// Body is the upstream request body and ContentType its media type.
	Body        io.Reader
	ContentType string
}

// Forwarder is an adapter that relays media and ranking requests: it returns the upstream's
// success response (body guarded by the idle timeout) or an *Error.
type Forwarder interface {
	Forward(ctx context.Context, call *ForwardCall) (*http.Response, error)
}

// FamilyPaths maps the forwarded endpoint families to their path below an OpenAI-style base URL
// (".../v1").
var FamilyPaths = map[string]string{
	"rerank":               "/rerank",
	"moderations":          "/moderations",
	"images.generations":   "/images/generations",
	"images.edits":         "/images/edits",
	"images.variations":    "/images/variations",
	"audio.speech":         "/audio/speech",
	"audio.transcriptions": "/audio/transcriptions",
	"audio.translations":   "/audio/translations",
}
