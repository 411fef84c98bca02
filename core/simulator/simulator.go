// Package simulator is the built-in fake upstream: one http.Handler that imitates the OpenAI
// (chat completions, legacy completions, responses, embeddings, moderations, images, audio and
// the realtime WebSocket), Jina/Cohere-v1 (rerank), Anthropic (messages) and Gemini
// (generateContent and friends) APIs byte-compatibly and deterministically. make run points the
// demo catalogue at it, the end-to-end tests use it as the upstream, and the benchmark uses it
// as a backend with known latency.
//
// Answers are derived from the request alone (a hash of the last user text, of the prompt, of
// an uploaded file), so the same request always gets the same answer. Tests steer it with
// directives written in the last user text, because the gateway forwards bodies but never client
// headers:
//
//	#sim:fail=<status>   answer that HTTP status with the protocol's error body (realtime: the
//	                     response ends with status failed)
//	#sim:cut             stream half the chunks, then drop the connection (no terminal event);
//	                     #sim:cut=eof ends the body cleanly instead of dropping the connection;
//	                     on the realtime socket the TCP connection drops mid-response
//	#sim:stall=<dur>     pause that long before the second chunk (a non-streaming answer
//	                     is that much later)
//	#sim:delay=<dur>     extra delay before the response headers
//	#sim:cache=<n>       report n cached input tokens
//	#sim:think           emit a reasoning/thinking part first
//	#sim:error-mid       send the protocol's mid-stream error event after the first chunk
//	                     (=<status> picks the error; on /v1/responses =failed sends
//	                     response.failed instead of the error event)
//	#sim:words=<n>       answer with n words instead of Options.Words
//	#sim:flag[=<cat>]    moderations: flag the input for that category (default violence)
//	#sim:audio           realtime: answer with audio (output_audio deltas, audio tokens)
//	#sim:close=<code>    realtime: send a close frame with that code after response.created
//
// The routes other than chat read their directives from the text that plays the user's part:
// the rerank query, the moderation inputs, the image prompt, the speech input, the transcription
// prompt field, the latest user item of a realtime conversation.
//
// Routes (all POST with a JSON body unless noted):
//
//	/v1/chat/completions, /v1/completions          OpenAI chat and legacy completions
//	/v1/responses, /v1/responses/compact,
//	/v1/responses/input_tokens                     OpenAI responses
//	/v1/embeddings                                 OpenAI embeddings
//	/v1/rerank                                     Jina / Cohere v1 rerank
//	/v1/moderations                                OpenAI moderations
//	/v1/images/generations                         OpenAI images; PNG (or JPEG) of at most 16x16
//	/v1/images/edits, /v1/images/variations        multipart, read as a stream (see LastForm)
//	/v1/audio/speech                               binary audio streamed in chunks
//	/v1/audio/transcriptions, /v1/audio/translations  multipart, read as a stream
//	GET /v1/realtime?model=<m>                     the GA realtime protocol over WebSocket
//	GET /sim/images/<rrggbb>-<w>x<h>.png           the picture behind an images url answer
//	/v1/messages, /v1/messages/count_tokens        Anthropic
//	/v1beta/models/<m>:<method> (or /v1/models/…)  Gemini generateContent,
//	                                               streamGenerateContent, countTokens,
//	                                               embedContent, batchEmbedContents
//
// On the realtime socket a binary frame from the client is echoed back as a binary frame (the
// real API never sends one); it lets a proxy's tests check that frames pass both ways intact.
package simulator

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Options tune the simulator's pacing.
type Options struct {
	// FirstByteDelay is waited before the response headers are written.
	FirstByteDelay time.Duration
	// ChunkDelay is waited between two streamed chunks; non-streaming answers wait the total a
	// stream would have taken, so both modes cost the same wall time.
	ChunkDelay time.Duration
	// Words is the number of words (and streamed chunks) of a plain answer; 0 means 12.
	Words int
	// Now gives the creation timestamps; nil means time.Now. Tests fix it for golden output.
	Now func() time.Time
	// PrefixCache reports cached input as a provider's prompt cache would: the longest
	// start of the prompt (whole texts: system, turns) this simulator has seen before. A
	// #sim:cache directive still wins.
	PrefixCache bool
	// RefuseKeys are credentials the simulator answers 401, as a provider answers a revoked
	// key (Authorization bearer, x-api-key or x-goog-api-key).
	RefuseKeys []string
}

// maxBody bounds a request body; the real APIs accept about 32 MiB.
const maxBody = 64 << 20

// Simulator is the handler. It also records what it received, for tests that check what the
// gateway sends upstream.
type Simulator struct {
	o Options

	mu       sync.Mutex
	prefixes map[uint64]bool // starts of prompts seen (PrefixCache)
	requests map[string]int
	total    int
	header   http.Header
	query    url.Values
	body     []byte
	form     []FormPart
}

// New returns a simulator with the given options.
func New(o Options) *Simulator {
	if o.Words <= 0 {
		o.Words = 12
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Simulator{o: o, requests: map[string]int{}, prefixes: map[uint64]bool{}}
}

// refused reports whether the request's credential is one of RefuseKeys.
func (s *Simulator) refused(r *http.Request) bool {
	if len(s.o.RefuseKeys) == 0 {
		return false
	}
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	for _, h := range []string{"X-Api-Key", "X-Goog-Api-Key"} {
		if v := r.Header.Get(h); v != "" {
			key = v
		}
	}
	return key != "" && slices.Contains(s.o.RefuseKeys, key)
}

// cachedPrefix is the input the simulator's prompt cache holds for the conversation: the
// bytes of its longest start seen before (as tokens, a quarter of them), and it remembers
// every start of this one.
func (s *Simulator) cachedPrefix(c *convo) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	hit := 0
	for _, m := range c.marks {
		if s.prefixes[m.hash] {
			hit = m.bytes
		}
		s.prefixes[m.hash] = true
	}
	return hit / 4
}

// Requests returns how many requests arrived on the URL path (without query), or in total
// when path is empty.
func (s *Simulator) Requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if path == "" {
		return s.total
	}
	return s.requests[path]
}

// LastHeaders returns a copy of the headers of the last request received (nil before any).
func (s *Simulator) LastHeaders() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.header.Clone()
}

// LastBody returns a copy of the body of the last request received; nil after a multipart
// upload (see LastForm) or a realtime handshake.
func (s *Simulator) LastBody() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.body)
}

// LastQuery returns the query parameters of the last request received (nil before any), e.g.
// the model of a realtime handshake.
func (s *Simulator) LastQuery() url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.query == nil {
		return nil
	}
	q := make(url.Values, len(s.query))
	for k, v := range s.query {
		q[k] = append([]string(nil), v...)
	}
	return q
}

// record counts a request and keeps its headers, query and body (nil for the routes that do
// not read the body whole).
func (s *Simulator) record(r *http.Request, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[r.URL.Path]++
	s.total++
	s.header = r.Header.Clone()
	s.query = r.URL.Query()
	s.body = body
}

// ServeHTTP routes by path. Most routes take a JSON POST body, read whole; multipart uploads
// are read as a stream and the realtime route upgrades to a WebSocket, so both are routed
// before the body is read.
func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/v1/realtime":
		s.serveRealtime(w, r)
		return
	case strings.HasPrefix(r.URL.Path, imageFilePrefix):
		s.serveImageFile(w, r)
		return
	}
	if h := formRoute(r.URL.Path); h != nil {
		s.serveForm(w, r, h)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	s.record(r, body)
	p := familyOf(r.URL.Path)
	switch {
	case err != nil:
		writeError(w, p, http.StatusBadRequest, "could not read the request body: "+err.Error())
		return
	case len(body) > maxBody:
		writeError(w, p, http.StatusRequestEntityTooLarge, "request body too large")
		return
	}
	if s.refused(r) {
		writeError(w, p, http.StatusUnauthorized, "the API key is revoked")
		return
	}
	h := s.route(r.URL.Path)
	if h == nil {
		writeError(w, p, http.StatusNotFound, "unknown path "+r.URL.Path)
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, p, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
		return
	}
	h(&exchange{sim: s, w: w, r: r, body: body, proto: p})
}

// route returns the handler of a path, nil when unknown.
func (s *Simulator) route(path string) func(*exchange) {
	switch path {
	case "/v1/chat/completions":
		return serveChat
	case "/v1/completions":
		return serveCompletions
	case "/v1/responses":
		return serveResponses
	case "/v1/responses/compact":
		return serveCompact
	case "/v1/responses/input_tokens":
		return serveResponsesInputTokens
	case "/v1/embeddings":
		return serveEmbeddings
	case "/v1/rerank":
		return serveRerank
	case "/v1/moderations":
		return serveModerations
	case "/v1/images/generations":
		return serveImageGenerations
	case "/v1/audio/speech":
		return serveSpeech
	case "/v1/messages":
		return serveMessages
	case "/v1/messages/count_tokens":
		return serveCountTokens
	}
	if _, method, ok := geminiPath(path); ok {
		switch method {
		case "generateContent", "streamGenerateContent":
			return serveGenerate
		case "countTokens":
			return serveGeminiCount
		case "embedContent":
			return serveEmbedContent
		case "batchEmbedContents":
			return serveBatchEmbed
		}
	}
	return nil
}

// formRoute returns the handler of a multipart path, nil for the others.
func formRoute(path string) func(*exchange) {
	switch path {
	case "/v1/images/edits":
		return serveImageEdits
	case "/v1/images/variations":
		return serveImageVariations
	case "/v1/audio/transcriptions":
		return serveTranscriptions
	case "/v1/audio/translations":
		return serveTranslations
	}
	return nil
}

// geminiPath splits "/v1beta/models/{model}:{method}" (or /v1/...).
func geminiPath(path string) (model, method string, ok bool) {
	rest, found := strings.CutPrefix(path, "/v1beta/models/")
	if !found {
		if rest, found = strings.CutPrefix(path, "/v1/models/"); !found {
			return "", "", false
		}
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}

// familyOf tells which error convention a path uses.
func familyOf(path string) protocol {
	switch {
	case strings.HasPrefix(path, "/v1/messages"):
		return protoAnthropic
	case strings.HasPrefix(path, "/v1beta/"), strings.Contains(path, ":"):
		return protoGemini
	default:
		return protoOpenAI
	}
}
