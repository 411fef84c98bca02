// Package simulator is the built-in fake upstream: one http.Handler that imitates the OpenAI
// (chat completions, legacy completions, responses, embeddings), Anthropic (messages) and
// Gemini (generateContent and friends) APIs byte-compatibly and deterministically. make run
// points the demo catalogue at it, the end-to-end tests use it as the upstream, and the
// benchmark uses it as a backend with known latency.
//
// Answers are derived from the request alone (a hash of the last user text), so the same
// request always gets the same answer. Tests steer it with directives written in the last user
// text, because the gateway forwards bodies but never client headers:
//
//	#sim:fail=<status>   answer that HTTP status with the protocol's error body
//	#sim:cut             stream half the chunks, then drop the connection (no terminal event);
//	                     #sim:cut=eof ends the body cleanly instead of dropping the connection
//	#sim:stall=<dur>     pause that long before the second chunk (a non-streaming answer
//	                     is that much later)
//	#sim:delay=<dur>     extra delay before the response headers
//	#sim:cache=<n>       report n cached input tokens
//	#sim:think           emit a reasoning/thinking part first
//	#sim:error-mid       send the protocol's mid-stream error event after the first chunk
//	                     (=<status> picks the error; on /v1/responses =failed sends
//	                     response.failed instead of the error event)
//	#sim:words=<n>       answer with n words instead of Options.Words
package simulator

import (
	"bytes"
	"io"
	"net/http"
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
}

// maxBody bounds a request body; the real APIs accept about 32 MiB.
const maxBody = 64 << 20

// Simulator is the handler. It also records what it received, for tests that check what the
// gateway sends upstream.
type Simulator struct {
	o Options

	mu       sync.Mutex
	requests map[string]int
	total    int
	header   http.Header
	body     []byte
}

// New returns a simulator with the given options.
func New(o Options) *Simulator {
	if o.Words <= 0 {
		o.Words = 12
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Simulator{o: o, requests: map[string]int{}}
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

// LastBody returns a copy of the body of the last request received.
func (s *Simulator) LastBody() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.body)
}

func (s *Simulator) record(r *http.Request, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[r.URL.Path]++
	s.total++
	s.header = r.Header.Clone()
	s.body = body
}

// ServeHTTP routes by path; every route takes a JSON POST body.
func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
