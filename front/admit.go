package front

import (
	"compress/gzip"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
	"modelgateway/core/wire/routes"
	"modelgateway/front/contentgen"
	"modelgateway/front/media"
	"modelgateway/front/relay"
)

// Limits are the front's defences against clients that send too much or too slowly.
type Limits struct {
	// BodyBudget bounds the bytes of request bodies the replica buffers at once, KeyBodyBudget
	// those of one key, ProfileBodyBudget those of all the keys of one profile (relay.Budget);
	// 0 means the default, negative means unbounded.
	BodyBudget, KeyBodyBudget, ProfileBodyBudget int64
	// BodyIdle is the longest pause within a request body; BodyMinRate (bytes per second) is
	// the slowest average a body may arrive at once BodyGrace has passed. Neither bounds the
	// answer: a stream may pause as long as its upstream does (spec 6.2).
	BodyIdle    time.Duration
	BodyMinRate int64
	BodyGrace   time.Duration
}

// Defaults of Limits: a replica buffers at most four ordinary 32 MiB bodies (or any number of
// small ones) at once, one key at most two, and one profile, whatever its keys, no more than
// one key may: half the replica's budget is always left to the other profiles.
const (
	DefaultBodyBudget        = 128 << 20
	DefaultKeyBodyBudget     = 64 << 20
	DefaultProfileBodyBudget = 64 << 20
	DefaultBodyIdle          = 15 * time.Second
	DefaultBodyMinRate       = 8 << 10
	DefaultBodyGrace         = 10 * time.Second
)

func (l Limits) withDefaults() Limits {
	pick := func(v, d int64) int64 {
		switch {
		case v == 0:
			return d
		case v < 0:
			return 0
		}
		return v
	}
	l.BodyBudget = pick(l.BodyBudget, DefaultBodyBudget)
	l.KeyBodyBudget = pick(l.KeyBodyBudget, DefaultKeyBodyBudget)
	l.ProfileBodyBudget = pick(l.ProfileBodyBudget, DefaultProfileBodyBudget)
	l.BodyMinRate = pick(l.BodyMinRate, DefaultBodyMinRate)
	if l.BodyIdle <= 0 {
		l.BodyIdle = DefaultBodyIdle
	}
	if l.BodyGrace <= 0 {
		l.BodyGrace = DefaultBodyGrace
	}
	return l
}

// routeFamily is the endpoint family of a POST route and, for /v1beta, the model of its path:
// what core can check before a byte of the body is read.
func routeFamily(path string) (family, model string) {
	if f, ok := routes.Fixed(path); ok {
		return f, ""
	}
	model, action, ok := contentgen.SplitPath(path)
	if !ok {
		return "", ""
	}
	if f, ok := routes.ContentAction(action); ok {
		return f, model
	}
	// An unknown action is refused by the content-generation handler; until then it is
	// checked as the family of the remaining actions.
	return contentgen.FamilyEmbed, model
}

// admit decides everything that does not need the body before reading any of it: the key,
// the family and (where the path names it) the model, whether the key's profile can pay the
// smallest hold of the route (insufficient_balance), the content type and encoding, and the
// request's share of the replica's body budget. It returns the request to serve, with its
// body paced and charged, and its paced body, whose release runs when the request ends
// (a method, not a closure: one allocation less per request); nil when it answered.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, h http.Handler) (*http.Request, *pacedBody) {
	// A refusal closes the connection: net/http would otherwise read up to 256 KiB of the
	// unread body, at the client's pace, before sending the answer.
	refuse := func(e *apierror.Error) (*http.Request, *pacedBody) {
		w.Header().Set("Connection", "close")
		relay.WriteError(w, r, e)
		return nil, nil
	}
	family, model := routeFamily(r.URL.Path)
	// The paced body is made first: the key check's request lives in it (one allocation).
	paced := new(pacedBody)
	ar := &paced.authorize
	ar.EndpointFamily, ar.Model, ar.CheckBalance = family, model, true
	resp, err := s.cfg.Core.Authorize(relay.OutgoingContext(r), ar)
	if err != nil {
		return refuse(apistatus.FromError(err))
	}
	if _, isMedia := h.(*media.Handler); !isMedia {
		// Media routes check their own (spec 4.4); text routes take JSON.
		if apiErr := checkJSONType(relay.HeaderValue(r.Header, "Content-Type")); apiErr != nil {
			return refuse(relay.KeyFirst(relay.OutgoingContext(r), s.cfg.Core, family, apiErr))
		}
	}
	paced.body, paced.rc, paced.header = r.Body, *http.NewResponseController(w), w.Header()
	paced.start, paced.limits = time.Now(), s.limits
	r.Body = paced
	if apiErr := decodeContentEncoding(r); apiErr != nil {
		paced.clear()
		return refuse(relay.KeyFirst(relay.OutgoingContext(r), s.cfg.Core, family, apiErr))
	}
	r, paced.lease = relay.WithLease(r, s.budget, resp.GetKeyId(), resp.GetProfileId())
	return r, paced
}

// checkJSONType is the text routes' content-type rule: JSON (application/json or any
// +json type, any parameters) or no Content-Type at all, which SDK-less clients send. A
// form or text/plain body is refused: it is what a browser may send across origins without
// asking (a "simple" request), and a gateway that takes it serves cross-site forgeries.
func checkJSONType(ct string) *apierror.Error {
	if ct == "application/json" || strings.TrimSpace(ct) == "" {
		return nil // what nearly every client sends, without parsing it
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))) {
		return nil
	}
	return apierror.New(apierror.UnsupportedContentType, "this route takes application/json, not %q", ct)
}

// decodeContentEncoding accepts gzip (decoded as it is read, against the route's limit and
// gzipMaxRatio) and identity; any other coding is 415.
func decodeContentEncoding(r *http.Request) *apierror.Error {
	enc := strings.ToLower(strings.TrimSpace(relay.HeaderValue(r.Header, "Content-Encoding")))
	switch enc {
	case "", "identity":
		return nil
	case "gzip", "x-gzip":
	default:
		return apierror.New(apierror.UnsupportedContentType, "Content-Encoding %q is not supported; send gzip or no encoding", enc)
	}
	r.Body = &gzipBody{raw: &countingReader{r: r.Body}, close: r.Body}
	r.ContentLength = -1 // the declared length is the compressed one
	r.Header.Del("Content-Encoding")
	r.Header.Del("Content-Length")
	return nil
}

// A gzip body may expand at most gzipMaxRatio times the compressed bytes read (beyond a
// first gzipRatioFloor, which any body may reach). The route's limit bounds the decoded
// size (the reader stops at its first byte beyond: payload_too_large), but not the work a
// small upload buys: 80 KB of gzip decodes to 32 MiB of small JSON messages, whose parsing,
// pricing and forwarding took 2.4 s of CPU. With the ratio, a body costs the gateway no
// more per byte sent than a plain one 64 times its size; ordinary JSON compresses 3 to 20
// times.
const (
	gzipMaxRatio   = 64
	gzipRatioFloor = 1 << 20
)

// gzipBody opens the gzip stream on the first read, so that a bad header is a body error of
// the handler, which knows how to answer it after the key check.
type gzipBody struct {
	raw     *countingReader
	close   io.Closer
	zr      *gzip.Reader
	decoded int64
	err     error
}

func (g *gzipBody) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.zr == nil {
		zr, err := gzip.NewReader(g.raw)
		if err != nil {
			g.err = bodyErr(err, "the gzip body is not valid: %v")
			return 0, g.err
		}
		g.zr = zr
	}
	n, err := g.zr.Read(p)
	g.decoded += int64(n)
	if g.decoded > gzipRatioFloor && g.decoded > gzipMaxRatio*g.raw.n {
		g.err = apierror.New(apierror.PayloadTooLarge, "the gzip body expands more than %d times; send it less compressed or uncompressed", gzipMaxRatio)
		return 0, g.err
	}
	if err != nil && !errors.Is(err, io.EOF) {
		g.err = bodyErr(err, "the gzip body is not valid: %v")
		err = g.err
	}
	return n, err
}

// bodyErr keeps a reader's own answer (a body too slow) and makes any other error the
// format's.
func bodyErr(err error, format string) error {
	var ae *apierror.Error
	if errors.As(err, &ae) {
		return ae
	}
	return apierror.New(apierror.InvalidRequest, format, err)
}

func (g *gzipBody) Close() error { return g.close.Close() }

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// pacedBody enforces the body's idle timeout and minimum rate through the connection's read
// deadline, which it clears the moment the body has ended: the answer, however long its
// stream, is never timed (spec 6.2).
type pacedBody struct {
	body    io.ReadCloser
	rc      http.ResponseController // by value: one allocation less per request
	header  http.Header
	start   time.Time
	n       int64
	limits  Limits
	cleared bool
	armed   bool         // a read deadline was set
	lease   *relay.Lease // the request's share of the body budget, given back by release
	// authorize is the key check's request (admit), in this allocation rather than its own.
	authorize corev1.AuthorizeRequest
}

func (p *pacedBody) Read(b []byte) (int, error) {
	if p.cleared {
		return p.body.Read(b)
	}
	if r, ok := p.body.(interface{ Ready() bool }); ok && r.Ready() {
		// The read cannot wait for the client (the body's bytes are buffered: nearly always
		// the whole of a small body arrived with the head): nothing to time.
		return p.readPaced(b)
	}
	now := time.Now()
	deadline := now.Add(p.limits.BodyIdle)
	if rate := p.limits.BodyMinRate; rate > 0 {
		// The next byte is due when the average since the grace period would fall below rate.
		due := p.start.Add(p.limits.BodyGrace + time.Duration(float64(p.n)/float64(rate)*float64(time.Second)))
		if due.Before(deadline) {
			deadline = due
		}
		if !deadline.After(now) {
			deadline = now.Add(time.Millisecond)
		}
	}
	_ = p.rc.SetReadDeadline(deadline)
	p.armed = true
	return p.readPaced(b)
}

// readPaced reads from the body and turns a timeout into the client's error.
func (p *pacedBody) readPaced(b []byte) (int, error) {
	n, err := p.body.Read(b)
	p.n += int64(n)
	if err != nil {
		if err == io.EOF { // the end of every body: not a timeout, and no escaping net.Error to test it
			p.clear()
			return n, err
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			// The connection is done for: leave the deadline expired and close after the
			// answer, or net/http would wait for the rest of the body before answering.
			p.cleared = true
			p.header.Set("Connection", "close")
			return n, &apierror.Error{Code: apierror.InvalidRequest, Status: http.StatusRequestTimeout,
				Message: "the request body arrived too slowly (a pause of " + p.limits.BodyIdle.String() + " or a rate below the minimum)"}
		}
		p.clear()
	}
	return n, err
}

func (p *pacedBody) Close() error { return p.body.Close() }

// release ends the request's admission: its body budget and pacing.
func (p *pacedBody) release() {
	p.lease.Release()
	p.clear()
}

// clear lifts the read deadline, when one was set: after the body the connection is the
// answer's.
func (p *pacedBody) clear() {
	if !p.cleared {
		p.cleared = true
		if p.armed {
			_ = p.rc.SetReadDeadline(time.Time{})
		}
	}
}
