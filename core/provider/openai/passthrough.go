package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
	"modelgateway/core/provider"
	"modelgateway/core/wire/chatwire"
	"modelgateway/core/wire/sse"
)

// chatPassthrough sends a chat-completions client's own body to the upstream's chat route.
func chatPassthrough(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	return passthrough(ctx, call, "/chat/completions")
}

// passthrough sends the client's raw body with only the model rewritten (and, on streams,
// stream_options.include_usage switched on: chat streams always report usage, spec 6.4, and
// billing needs it), and relays the upstream's chunks verbatim as Native events. It serves
// both the chat and the legacy completions routes, whose streams and usage objects have the
// same shape.
func passthrough(ctx context.Context, call *provider.Call, route string) (provider.Stream, error) {
	stream := call.Request.GetStream()
	room := 0
	if stream {
		room = len(includeUsageMember) + 1 // includeUsage's, in the renamed body's allocation
	}
	body, err := provider.SetModelRoom(call.Request.GetRawBody(), call.UpstreamModel, room)
	if err != nil {
		return nil, err
	}
	if stream {
		if body, err = includeUsage(body, true); err != nil {
			return nil, &provider.Error{Message: "setting stream_options on the request body", Err: err}
		}
	}
	resp, err := post(ctx, call, route, body, stream)
	if err != nil {
		return nil, err
	}
	if stream {
		s, start := passStream(resp.Body, call.UpstreamModel, call.PublicModel)
		start.Model, start.Created, start.Passthrough = call.PublicModel, time.Now().Unix(), true
		start.Status, start.ContentType = http.StatusOK, resp.Header.Get(provider.HeaderContentType)
		return s, nil
	}
	// The Start and the answer's one event share an allocation.
	x := new(provider.NativeAnswer)
	start := &x.Start
	start.Model, start.Created, start.Passthrough = call.PublicModel, time.Now().Unix(), true
	start.Status, start.ContentType = http.StatusOK, resp.Header.Get(provider.HeaderContentType)
	answer, err := provider.ReadAll(resp.Body, provider.MaxAnswer)
	if err != nil {
		return nil, err
	}
	answer = provider.RenameAnswerModel(answer, call.UpstreamModel, call.PublicModel)
	start.Id = gjson.GetBytes(answer, "id").String()
	x.Event("", answer)
	return x.Stream(metering.FromOpenAIChat(provider.RawField(answer, "usage"))), nil
}

// passStream is a passthrough stream over body. The stream, its decoder, its Start and the
// first buffer of its renamed chunks are one allocation (they were four, and each chunk's
// copy and event came from blocks of their own, some 10 KiB for a 20-word answer): the
// decoder lends each chunk and its event until the next one (provider.Lent). The buffer's
// bytes come last, so that the collector's scan of the object ends before them.
// The caller fills its Start in before the stream is read.
func passStream(body io.ReadCloser, upstream, public string) (*provider.SSEStream, *corev1.Start) {
	x := &struct {
		stream provider.SSEStream
		dec    passDecoder
		start  corev1.Start
		room   [passRoom]byte
	}{}
	x.dec.upstream, x.dec.public = upstream, public
	x.dec.lent.Room(x.room[:])
	x.stream.Init(body, &x.start, &x.dec)
	x.stream.BorrowData() // the decoder lends each chunk only until the next (Lent)
	return &x.stream, &x.start
}

// passRoom holds a typical chat chunk (some 250 bytes) renamed; a longer one grows the
// stream's buffer.
const passRoom = 512

// includeUsage is sjson.SetBytes(body, "stream_options.include_usage", true). A body without
// stream_options (nearly every one) gets the member spliced in before its closing brace as
// sjson writes it there (its appendRawPaths for a path it does not find: what precedes the
// object dropped, a comma unless the object is empty, everything after its last brace
// dropped), in one copy, or none for a body the caller owns (owned: it may be written) that
// has the room (SetModelRoom leaves it); sjson looked for the key, parsed the body again and
// built the member through a few allocations of its own. FuzzIncludeUsage keeps it to sjson.
func includeUsage(body []byte, owned bool) ([]byte, error) {
	if gjsonIndex(body, "stream_options") > 0 { // sjson sets the member it finds there
		return sjson.SetBytes(body, "stream_options.include_usage", true)
	}
	i := 0
	for i < len(body) && body[i] <= ' ' {
		i++
	}
	if i == len(body) || body[i] != '{' {
		return sjson.SetBytes(body, "stream_options.include_usage", true) // not an object
	}
	obj := body[i:]
	comma := false
	for _, c := range obj[1:] {
		if c > ' ' {
			comma = c != '}' && c != ']'
			break
		}
	}
	end := bytes.LastIndexByte(obj, '}')
	if end <= 0 {
		return sjson.SetBytes(body, "stream_options.include_usage", true)
	}
	var out []byte
	if owned && i == 0 {
		out = body[:end] // the member goes where the bytes it drops were, in the room beyond
	} else {
		out = append(make([]byte, 0, end+1+len(includeUsageMember)+1), obj[:end]...)
	}
	if comma {
		out = append(out, ',')
	}
	out = append(out, includeUsageMember...)
	return append(out, '}'), nil
}

const includeUsageMember = `"stream_options":{"include_usage":true}`

// gjsonIndex is where gjson finds path in body, read in place (0: not found, or nowhere sjson
// takes for found): sjson's own look for a path it sets.
func gjsonIndex(body []byte, path string) int {
	if len(body) == 0 {
		return 0
	}
	return gjson.Get(unsafe.String(&body[0], len(body)), path).Index
}

// post sends body to the upstream route with the gateway's own headers and the provider
// credential; nothing of the client's request headers goes along.
func post(ctx context.Context, call *provider.Call, route string, body []byte, stream bool) (*http.Response, error) {
	req, err := provider.NewRequest(ctx, strings.TrimRight(call.BaseURL, "/")+route, body)
	if err != nil {
		return nil, &provider.Error{Message: "building the upstream request", Err: err}
	}
	if call.APIKey != "" {
		provider.SetBearer(req.Header, call.APIKey)
	}
	provider.SetAccept(req.Header, stream)
	return provider.Do(req, call.Timeouts)
}

// passDecoder relays a chat or completions stream: every chunk but [DONE] goes out as it
// came (model name aside); the chunk with a non-null usage is kept for metering. The
// per-chunk work is one scan (provider.ChunkEnvelope) unless a chunk looks like an error or
// carries usage.
// Its events are lent (provider.Lent): each is valid until the stream's next.
type passDecoder struct {
	upstream, public string
	usage            metering.Usage // the last usage object's, when hasUsage
	hasUsage         bool
	one              provider.Single
	lent             provider.Lent // the chunks renamed to the public model, and their events
	// keys is ScanChunk for the stream's chunks, which open with the same bytes: each is
	// looked at from where it stops sharing them with the one recorded.
	keys provider.ChunkEnvelope
}

var keyError = []byte(`"error"`) // fastchunk's look for an error

func (d *passDecoder) Decode(ev sse.Event) ([]*corev1.GenerateEvent, bool, error) {
	if isDone(ev.Data) {
		return nil, true, nil
	}
	// One pass over the chunk for its three looks: an error, a usage object, the model
	// (over what it does not share with the stream's recorded chunk).
	k := d.keys.Scan(ev.Data)
	if k.Error {
		if e := gjson.GetBytes(ev.Data, "error"); e.Exists() && e.Type != gjson.Null {
			return nil, false, streamError(e.Raw)
		}
	}
	if k.Usage {
		// Read in place and normalised at once: the reader lends ev.Data only until its next
		// event, and the counts are all the stream keeps of it (the last usage object wins,
		// as when its bytes were kept and read at the end).
		if u := provider.RawField(ev.Data, "usage"); len(u) > 0 && u[0] == '{' {
			d.usage, d.hasUsage = metering.FromOpenAIChat(u), true
		}
	}
	// Lent on: valid until the next event, as ev.Data is (the consumer copies what it keeps).
	return d.one.Of(d.lent.EventKeys("", ev.Data, k, d.upstream, d.public)), false, nil
}

func (d *passDecoder) End() ([]*corev1.GenerateEvent, error) { return nil, cutError() }

func (d *passDecoder) Usage() metering.Usage {
	if !d.hasUsage {
		return metering.FromOpenAIChat(nil) // none reported
	}
	return d.usage
}

// isDone recognises the terminator, tolerating stray whitespace around it.
func isDone(data []byte) bool {
	return len(data) < 16 && string(bytes.TrimSpace(data)) == chatwire.Done
}

// cutError is a stream that ended without data: [DONE]: its answer and usage are incomplete.
func cutError() error {
	return &provider.Error{Message: "the upstream stream ended before data: [DONE]"}
}

// streamError is an {"error":{...}} chunk: the upstream failed after its 200.
func streamError(raw string) *provider.Error {
	var body chatwire.ErrorBody
	_ = json.Unmarshal([]byte(raw), &body)
	msg := "the upstream failed mid-stream"
	if body.Message != "" {
		msg += ": " + truncate(body.Message, 500)
	}
	return &provider.Error{Message: msg}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
